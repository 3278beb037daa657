// A plain text table, as dlock status prints it: a header row, then one
// row per line, columns two spaces apart.
#pragma once

#include <string>
#include <vector>

namespace dlock::cli {

enum class Align { left, right };

struct Column {
  std::string header;
  Align align = Align::left;
};

// rows[i] has one cell per column. Widths count bytes (names are mostly
// ASCII); no line ends in spaces.
std::string format_table(const std::vector<Column>& columns,
                         const std::vector<std::vector<std::string>>& rows);

}  // namespace dlock::cli
