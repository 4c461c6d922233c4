// A small Markdown renderer for model output. It escapes the whole text
// first, so nothing the model writes can become markup; only the tags made
// here are added: code fences and inline code, headings, bold, italic,
// strike-through, lists, block quotes, and links whose address is http(s).
"use strict";

const LLMMarkdown = (() => {
  const escapes = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

  // escapeHTML makes text safe as element content and as a quoted attribute.
  function escapeHTML(s) {
    return s.replace(/[&<>"']/g, (c) => escapes[c]);
  }

  // Placeholders hold finished pieces (code spans, links) out of the way of
  // the emphasis rules; the input's own \u0000 are dropped first.
  const hold = (store, html) => "\u0000" + (store.push(html) - 1) + "\u0000";
  const restore = (store, s) => s.replace(/\u0000(\d+)\u0000/g, (_, i) => store[Number(i)]);

  // inline renders one line's spans; text is raw (it is escaped here).
  function inline(text) {
    const store = [];
    let s = escapeHTML(text);
    s = s.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (_, _ticks, code) =>
      hold(store, "<code>" + code.trim() + "</code>"));
    // [label](http://...) on escaped text: the address cannot hold a quote
    // or a tag, and only http and https addresses become links.
    s = s.replace(/\[([^\]\u0000]+)\]\((https?:\/\/[^\s()\u0000]+)\)/gi, (_, label, href) =>
      hold(store, '<a href="' + href + '" target="_blank" rel="noopener noreferrer nofollow">' + emphasis(label) + "</a>"));
    return restore(store, emphasis(s));
  }

  // emphasis renders bold, italic and strike-through on escaped text.
  function emphasis(s) {
    s = s.replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>");
    s = s.replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>");
    s = s.replace(/\*(?=[^\s*])([^*]*?[^\s*])\*/g, "<em>$1</em>");
    s = s.replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_])_(?!\w)/g, "$1<em>$2</em>");
    return s.replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>");
  }

  const fence = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
  const heading = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const bullet = /^\s{0,3}[-*+]\s+(.*)$/;
  const numbered = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/;
  const quote = /^\s{0,3}>\s?(.*)$/;
  const rule = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;

  // render turns Markdown into HTML. An unclosed code fence (a reply still
  // streaming) runs to the end of the text.
  function render(md) {
    const lines = String(md).replace(/\u0000/g, "").replace(/\r\n?/g, "\n").split("\n");
    const out = [];
    let para = [];
    const endPara = () => {
      if (para.length) out.push("<p>" + para.map(inline).join("<br>") + "</p>");
      para = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i];
      let m;
      if ((m = fence.exec(line))) {
        endPara();
        const close = new RegExp("^\\s{0,3}" + m[1][0] + "{" + m[1].length + ",}\\s*$");
        const code = [];
        for (i++; i < lines.length && !close.test(lines[i]); i++) code.push(lines[i]);
        const lang = m[2] ? ' class="language-' + escapeHTML(m[2].replace(/[^\w+#.-]/g, "")) + '"' : "";
        out.push("<pre><code" + lang + ">" + escapeHTML(code.join("\n")) + "</code></pre>");
        continue;
      }
      if (line.trim() === "") { endPara(); continue; }
      if ((m = heading.exec(line))) {
        endPara();
        const n = m[1].length;
        out.push("<h" + n + ">" + inline(m[2]) + "</h" + n + ">");
        continue;
      }
      if (rule.test(line)) { endPara(); out.push("<hr>"); continue; }
      if (bullet.test(line) || numbered.test(line)) {
        endPara();
        const ordered = !bullet.test(line);
        const re = ordered ? numbered : bullet;
        const items = [];
        for (; i < lines.length && re.test(lines[i]); i++) {
          const mm = re.exec(lines[i]);
          items.push("<li>" + inline(ordered ? mm[2] : mm[1]) + "</li>");
        }
        i--;
        const first = ordered ? Number(numbered.exec(line)[1]) : 1;
        const open = ordered ? (first !== 1 ? '<ol start="' + first + '">' : "<ol>") : "<ul>";
        out.push(open + items.join("") + (ordered ? "</ol>" : "</ul>"));
        continue;
      }
      if (quote.test(line)) {
        endPara();
        const inner = [];
        for (; i < lines.length && quote.test(lines[i]); i++) inner.push(quote.exec(lines[i])[1]);
        i--;
        out.push("<blockquote>" + render(inner.join("\n")) + "</blockquote>");
        continue;
      }
      para.push(line);
    }
    endPara();
    return out.join("");
  }

  return { render, escapeHTML };
})();
