-- pandoc filter that turns docs/reference/dlock-command.md, written to read
-- well on GitHub too, into the dlock(1) manual page:
--   its "# ..." title is dropped (the page's title is dlock(1)), and the
--     other headings move up a level: "## NAME" is the man page's .SH NAME;
--   a list whose items each open with a term (`--ttl D` (`run`): ... or
--     **75** (`run`): ...) becomes a definition list, a man page's .TP;
--   links keep their text only: a man page cannot follow them.

local function is_term_start(inline)
  return inline and (inline.t == 'Code' or inline.t == 'Strong')
end

-- The inlines before the first ":" that ends a word, and those after it; nil
-- when the item does not open with a term.
local function split_term(block)
  if not block or (block.t ~= 'Plain' and block.t ~= 'Para') then return nil end
  local inlines = block.content
  if not is_term_start(inlines[1]) then return nil end
  for i, inline in ipairs(inlines) do
    if inline.t == 'Str' and inline.text:sub(-1) == ':' then
      local term = pandoc.List()
      for j = 1, i - 1 do term:insert(inlines[j]) end
      if #inline.text > 1 then term:insert(pandoc.Str(inline.text:sub(1, -2))) end
      local text = pandoc.utils.stringify(term)
      -- A term is short and no sentence.
      if #text > 60 or text:find('%. ') then return nil end
      local rest = pandoc.List()
      for j = i + 1, #inlines do rest:insert(inlines[j]) end
      while rest[1] and (rest[1].t == 'Space' or rest[1].t == 'SoftBreak') do
        rest:remove(1)
      end
      return term, rest
    end
  end
  return nil
end

function BulletList(list)
  local items = pandoc.List()
  for _, item in ipairs(list.content) do
    local term, rest = split_term(item[1])
    if not term then return nil end
    local blocks = pandoc.List({ pandoc.Plain(rest) })
    for j = 2, #item do blocks:insert(item[j]) end
    items:insert({ term, { blocks } })
  end
  return pandoc.DefinitionList(items)
end

function Link(link)
  return link.content
end

function Pandoc(doc)
  local blocks = pandoc.List()
  local dropped_title = false
  for _, block in ipairs(doc.blocks) do
    if block.t == 'Header' and block.level == 1 and not dropped_title then
      dropped_title = true
    else
      if block.t == 'Header' then block.level = math.max(1, block.level - 1) end
      blocks:insert(block)
    end
  end
  return pandoc.Pandoc(blocks, doc.meta)
end
