"""A multi-threaded Perl program (ithreads): workers that each allocate their own heap.

Perl's ithreads give every thread its own interpreter, so each worker allocates and frees
its own strings, arrays and hashes in parallel with the other: index building, regex
tokenizing, sorting, string rewriting over a generated text. Results are joined in a fixed
order, so the output does not depend on which thread finishes first.
"""

from __future__ import annotations

import random

from . import words


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    vocab = words(rng, params["vocab"])
    lines = []
    for i in range(params["lines"]):
        lines.append(" ".join(rng.choice(vocab) for _ in range(rng.randint(3, 14))) + f" {i}")
    src = f'''
use strict; use warnings; use threads;

sub work {{
    my ($path, $part, $parts, $rounds) = @_;
    open(my $fh, "<", $path) or die "cannot read $path";
    my @all = <$fh>;
    my @lines = @all[grep {{ $_ % $parts == $part }} 0 .. $#all];
    close $fh;
    my ($sum, %df) = (0);
    for my $r (1 .. $rounds) {{
        my (%index, %bigram);
        for my $i (0 .. $#lines) {{
            my @w = ($lines[$i] =~ /([a-z]+)/g);
            push @{{$index{{$_}}}}, $i for @w;
            $bigram{{"$w[$_-1] $w[$_]"}}++ for 1 .. $#w;
        }}
        my @top = (sort {{ $bigram{{$b}} <=> $bigram{{$a}} || $a cmp $b }} keys %bigram)[0 .. 4];
        my @rw = map {{ (my $s = $_) =~ s/([aeiou])([a-z])/$2\\U$1/g; $s }} @lines[0 .. ($#lines < 500 ? $#lines : 500)];
        $sum += scalar(keys %index) + length(join("", @rw)) + $bigram{{$top[0]}};
        $df{{$_}} += scalar @{{$index{{$_}}}} for keys %index;
    }}
    my @best = (sort {{ $df{{$b}} <=> $df{{$a}} || $a cmp $b }} keys %df)[0 .. 2];
    return "part $part: sum $sum top @best";
}}

my ($path, $workers) = @ARGV;
my $rounds = {params["rounds"]};
my @t = map {{ threads->create(\\&work, $path, $_, $workers, $rounds) }} 0 .. $workers - 1;
print $_->join(), "\\n" for @t;
'''
    return {"main.pl": src.encode(), "text.txt": ("\n".join(lines) + "\n").encode()}
