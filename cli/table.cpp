#include "table.h"

#include <langinfo.h>

#include <algorithm>
#include <clocale>
#include <cstring>
#include <cwchar>
#include <utility>

namespace dlock::cli {

namespace {

// A cell as printed, and how many columns it takes.
struct Shown {
  std::string text;
  std::size_t width = 0;
};

// The escape of one byte: \n, \t, \r, \\ or \xNN.
std::string escape_of(unsigned char byte) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (auto [raw, letter] :
       {std::pair{'\n', 'n'}, {'\t', 't'}, {'\r', 'r'}, {'\\', '\\'}}) {
    if (byte == static_cast<unsigned char>(raw)) return {'\\', letter};
  }
  return {'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
}

bool is_plain_ascii(unsigned char byte) {
  return byte >= 0x20 && byte < 0x7f && byte != '\\';
}

// The length of the valid UTF-8 sequence at the start of text (1 to 4) and
// its code point, or 0 when it is not one (overlong forms and surrogates
// included).
std::size_t utf8_sequence(std::string_view text, char32_t& code_point) {
  auto byte = [&](std::size_t i) {
    return static_cast<unsigned char>(text[i]);
  };
  unsigned char lead = byte(0);
  std::size_t length = lead < 0x80    ? 1
                       : lead >= 0xf0 ? 4
                       : lead >= 0xe0 ? 3
                                      : 2;
  if (lead >= 0x80 && (lead < 0xc2 || lead > 0xf4)) return 0;
  if (text.size() < length) return 0;
  char32_t c = length == 1 ? lead : lead & (0x7f >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
    c = (c << 6) | (byte(i) & 0x3f);
  }
  static constexpr char32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < kLeast[length] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
    return 0;
  }
  code_point = c;
  return length;
}

Shown shown(std::string_view text, Charset charset) {
  Shown out;
  std::size_t i = 0;
  while (i < text.size()) {
    unsigned char byte = static_cast<unsigned char>(text[i]);
    if (is_plain_ascii(byte)) {
      out.text += text[i++];
      ++out.width;
      continue;
    }
    char32_t c = 0;
    std::size_t length = 0;
    int width = -1;
    if (charset == Charset::utf8 && byte >= 0x80) {
      length = utf8_sequence(text.substr(i), c);
      if (length > 0) width = wcwidth(static_cast<wchar_t>(c));
    }
    if (width < 0) {  // a control character, or not printable here
      length = std::max<std::size_t>(length, 1);
      for (std::size_t k = 0; k < length; ++k) {
        std::string escape = escape_of(static_cast<unsigned char>(text[i + k]));
        out.text += escape;
        out.width += escape.size();
      }
    } else {
      out.text += text.substr(i, length);
      out.width += static_cast<std::size_t>(width);
    }
    i += length;
  }
  return out;
}

void append_row(std::string& out, const std::vector<Column>& columns,
                const std::vector<std::size_t>& widths,
                const std::vector<Shown>& cells) {
  std::string line;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    Shown cell = c < cells.size() ? cells[c] : Shown();
    std::string padding(widths[c] - cell.width, ' ');
    if (c > 0) line += "  ";
    line += columns[c].align == Align::right ? padding + cell.text
                                             : cell.text + padding;
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  out += line + "\n";
}

}  // namespace

Charset locale_charset() {
  std::setlocale(LC_CTYPE, "");
  const char* codeset = nl_langinfo(CODESET);
  return codeset && std::strcmp(codeset, "UTF-8") == 0 ? Charset::utf8
                                                       : Charset::bytes;
}

std::string escaped(std::string_view text, Charset charset) {
  return shown(text, charset).text;
}

std::string format_table(const std::vector<Column>& columns,
                         const std::vector<std::vector<std::string>>& rows,
                         Charset charset) {
  std::vector<std::vector<Shown>> lines;
  std::vector<Shown> headers;
  for (const Column& c : columns) headers.push_back(shown(c.header, charset));
  lines.push_back(std::move(headers));
  for (const auto& row : rows) {
    std::vector<Shown> cells;
    for (std::size_t c = 0; c < columns.size() && c < row.size(); ++c) {
      cells.push_back(shown(row[c], charset));
    }
    lines.push_back(std::move(cells));
  }
  std::vector<std::size_t> widths(columns.size(), 0);
  for (const auto& line : lines) {
    for (std::size_t c = 0; c < line.size(); ++c) {
      widths[c] = std::max(widths[c], line[c].width);
    }
  }
  std::string out;
  for (const auto& line : lines) append_row(out, columns, widths, line);
  return out;
}

}  // namespace dlock::cli
