// The per-process table of a multi-process (distributed) run on stderr: one row per profile
// (attribute/process_row.h), and the imbalance between the busiest and the least busy GPU.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "attribute/process_row.h"

namespace aiflame {

// Rows sorted by rank (then pid) and a closing line: total samples and GPU-busy imbalance.
void print_process_table(std::vector<ProcessRow> rows, std::ostream& out);

}  // namespace aiflame
