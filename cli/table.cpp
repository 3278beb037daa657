#include "table.h"

#include <algorithm>

namespace dlock::cli {

namespace {

void append_row(std::string& out, const std::vector<Column>& columns,
                const std::vector<std::size_t>& widths,
                const std::vector<std::string>& cells) {
  std::string line;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const std::string& cell = c < cells.size() ? cells[c] : std::string();
    std::string padding(widths[c] - cell.size(), ' ');
    if (c > 0) line += "  ";
    line += columns[c].align == Align::right ? padding + cell : cell + padding;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out += line + "\n";
}

}  // namespace

std::string format_table(const std::vector<Column>& columns,
                         const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  std::vector<std::string> headers;
  for (const Column& c : columns) {
    widths.push_back(c.header.size());
    headers.push_back(c.header);
  }
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < columns.size() && c < row.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  std::string out;
  append_row(out, columns, widths, headers);
  for (const auto& row : rows) append_row(out, columns, widths, row);
  return out;
}

}  // namespace dlock::cli
