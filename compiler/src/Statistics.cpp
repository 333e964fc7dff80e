// JSON output of the statistics. One line per translation unit, appended with O_APPEND so
// that parallel compiles (make -j) do not interleave inside a line.
#include "Statistics.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

namespace hlapa {

static std::string quoted(const std::string &S) {
  std::string Out = "\"";
  for (char C : S) {
    if (C == '"' || C == '\\') Out += '\\';
    if ((unsigned char)C < 0x20) {
      char Buf[8];
      snprintf(Buf, sizeof Buf, "\\u%04x", C);
      Out += Buf;
      continue;
    }
    Out += C;
  }
  return Out + "\"";
}

std::string Statistics::toJSON() const {
  std::ostringstream O;
  O << "{\"module\":" << quoted(Module) << ",\"functions\":" << Functions << ",\"sccs\":" << SCCs
    << ",\"static_pools\":" << StaticPools
    << ",\"global_pools\":" << GlobalPools << ",\"bump_pointer_pools\":" << BumpPointerPools << ",\"single_size_pools\":" << SingleSizePools
    << ",\"align8_pools\":" << Align8Pools
    << ",\"cloned_functions\":" << ClonedFunctions << ",\"pool_args_total\":" << PoolArgsTotal
    << ",\"pool_args_max\":" << PoolArgsMax << ",\"alloc_sites_pooled\":" << AllocSitesPooled
    << ",\"free_sites_pooled\":" << FreeSitesPooled << ",\"free_sites_eliminated\":" << FreeSitesEliminated
    << ",\"pools_destroyed_early\":" << PoolsDestroyedEarly << ",\"pools_created_late\":" << PoolsCreatedLate
    << ",\"topdown_args_to_malloc\":" << TopDownArgsToMalloc << ",\"topdown_args_to_global\":" << TopDownArgsToGlobal
    << ",\"topdown_pool_args_removed\":" << TopDownPoolArgsRemoved
    << ",\"topdown_clones_avoided\":" << TopDownClonesAvoided
    << ",\"topdown_args_external_from_caller\":" << TopDownArgsExternalFromCaller
    << ",\"indirect_calls\":" << IndirectCalls << ",\"indirect_calls_promoted\":" << IndirectPromoted
    << ",\"indirect_calls_ec_candidates\":" << IndirectECCandidates
    << ",\"indirect_calls_ec_candidates_heap\":" << IndirectECCandidatesHeap
    << ",\"alloc_sites_kept\":" << AllocSitesKept
    << ",\"analysis_seconds\":" << AnalysisSeconds << ",\"kept_reasons\":{";
  bool First = true;
  for (auto &KV : KeptReasons) {
    if (!First) O << ",";
    First = false;
    O << quoted(KV.first) << ":" << KV.second;
  }
  O << "},\"heap_nodes\":{";
  First = true;
  for (auto &KV : HeapNodes) {
    if (!First) O << ",";
    First = false;
    O << quoted(KV.first) << ":" << KV.second;
  }
  O << "}}";
  return O.str();
}

void Statistics::appendTo(const std::string &Path) const {
  std::string Line = toJSON() + "\n";
  int Fd = open(Path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (Fd < 0) {
    fprintf(stderr, "heaplayout-apa: cannot write statistics to %s\n", Path.c_str());
    return;
  }
  ssize_t W = write(Fd, Line.data(), Line.size());
  (void)W;
  close(Fd);
}

} // namespace hlapa
