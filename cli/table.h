// A plain text table, as dlock status prints it: a header row, then one
// row per line, columns two spaces apart. Cells are shown so that no text
// can break the table or reach the terminal as a control sequence: control
// characters are escaped (\n, \t, \r, \\ for a backslash, \xNN for the
// other bytes), as are bytes outside ASCII in a locale that is not UTF-8,
// and invalid or unprintable UTF-8 in one that is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlock::cli {

// How text reaches the terminal: UTF-8, whose characters are as wide as
// wcwidth() says (for the locale's LC_CTYPE, which must be UTF-8), or
// bytes, one column each.
enum class Charset { utf8, bytes };

// Sets LC_CTYPE from the environment and says whether it is UTF-8.
Charset locale_charset();

// text as a cell shows it (see above).
std::string escaped(std::string_view text, Charset charset);

enum class Align { left, right };

struct Column {
  std::string header;
  Align align = Align::left;
};

// rows[i] has one cell per column, escaped() here. Columns are as wide as
// their widest cell on the terminal; no line ends in spaces.
std::string format_table(const std::vector<Column>& columns,
                         const std::vector<std::vector<std::string>>& rows,
                         Charset charset = Charset::bytes);

}  // namespace dlock::cli
