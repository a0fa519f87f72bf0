// loom-scaling's --launch processes: one process per rank, as torchrun starts them. The ranks
// are this same program started again with --rank-world N, meeting through the TCP store on
// 127.0.0.1 (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), each on cuda:LOCAL_RANK.
#pragma once

#include <string>
#include <vector>

namespace loom::scaling {

// Starts `world` processes of `command` (argv[0] first) followed by --rank-world <world>
// --rank-result <result_path>, and waits for all of them. When one fails the others are
// killed and a loom::Error names the rank and how it ended (its own message is on stderr);
// likewise when `timeout_s` passes. Returns the text rank 0 wrote to result_path.
std::string run_rank_processes(const std::vector<std::string>& command, int world,
                               const std::string& result_path, int timeout_s);

}  // namespace loom::scaling
