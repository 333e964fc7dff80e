"""SQL for sqlite3: a small shop database built row by row, then reports over it.

The statements a real application sends: many single-row INSERTs inside transactions (each
parsed and planned anew), secondary indexes, joins with GROUP BY / ORDER BY, correlated
subqueries, a recursive CTE, window functions, UPDATE/DELETE churn, string functions.
Only aggregates are printed, so the output is short and exact.
"""

from __future__ import annotations

import random

from . import words


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    customers, orders, rounds = params["customers"], params["orders"], params["rounds"]
    names = words(rng, customers)
    cities = words(rng, max(5, customers // 50))
    products = words(rng, params["products"], lo=4, hi=14)
    out = [".headers off", ".mode list",
           "CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city TEXT, since INTEGER);",
           "CREATE TABLE product(id INTEGER PRIMARY KEY, title TEXT, price REAL, tags TEXT);",
           "CREATE TABLE orders(id INTEGER PRIMARY KEY, cust INTEGER, prod INTEGER, qty INTEGER, day INTEGER, note TEXT);",
           "BEGIN;"]
    for i, n in enumerate(names):
        out.append(f"INSERT INTO customer VALUES({i}, '{n}', '{rng.choice(cities)}', {rng.randint(2000, 2024)});")
    for i, p in enumerate(products):
        tags = ",".join(rng.sample(cities, min(3, len(cities))))
        out.append(f"INSERT INTO product VALUES({i}, '{p}', {rng.randint(100, 99999) / 100}, '{tags}');")
    out.append("COMMIT;")
    oid = 0
    for r in range(rounds):
        out.append("BEGIN;")
        for _ in range(orders // rounds):
            note = " ".join(rng.sample(names, 2)) if rng.random() < 0.3 else ""
            out.append(f"INSERT INTO orders VALUES({oid}, {rng.randrange(customers)}, {rng.randrange(len(products))}, "
                       f"{rng.randint(1, 9)}, {rng.randint(1, 365)}, '{note}');")
            oid += 1
        out.append("COMMIT;")
        if r == 0:
            out += ["CREATE INDEX orders_cust ON orders(cust);", "CREATE INDEX orders_prod ON orders(prod, day);",
                    "CREATE INDEX customer_city ON customer(city);"]
        lo = rng.randint(1, 300)
        out += [
            f"SELECT c.city, count(*), sum(o.qty * p.price) FROM orders o JOIN customer c ON c.id = o.cust "
            f"JOIN product p ON p.id = o.prod WHERE o.day BETWEEN {lo} AND {lo + 60} GROUP BY c.city "
            f"ORDER BY 3 DESC, 1 LIMIT 5;",
            f"SELECT name, (SELECT count(*) FROM orders WHERE cust = customer.id) AS n FROM customer "
            f"WHERE city = '{rng.choice(cities)}' ORDER BY n DESC, name LIMIT 3;",
            f"UPDATE orders SET qty = qty + 1 WHERE day % {rng.randint(5, 20)} = 0;",
            f"DELETE FROM orders WHERE id % {rng.randint(40, 90)} = {rng.randint(0, 30)};",
            "SELECT p.title, sum(o.qty), rank() OVER (ORDER BY sum(o.qty) DESC, p.title) FROM orders o "
            "JOIN product p ON p.id = o.prod GROUP BY p.id ORDER BY 3 LIMIT 3;",
            "SELECT group_concat(substr(upper(name), 1, 3), '') FROM (SELECT name FROM customer "
            f"ORDER BY replace(name, 'a', 'z') LIMIT {rng.randint(5, 12)});",
        ]
    out += [
        "WITH RECURSIVE seq(n, acc) AS (SELECT 1, '' UNION ALL SELECT n + 1, substr(acc || char(65 + n % 26), -40) "
        f"FROM seq WHERE n < {params['cte']}) SELECT count(*), max(length(acc)) FROM seq;",
        "SELECT count(DISTINCT note), sum(length(note)) FROM orders;",
        "SELECT cust, day, sum(qty) OVER (PARTITION BY cust ORDER BY day ROWS 3 PRECEDING) FROM orders "
        "ORDER BY cust, day, id LIMIT 5;",
    ]
    return {"script.sql": ("\n".join(out) + "\n").encode()}
