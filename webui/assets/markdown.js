// A small, safe Markdown renderer: the text is HTML-escaped first, then a
// few constructs become elements: headings, paragraphs, lists, fenced and
// inline code, bold, italic and links (http, https and mailto only).
// Nothing the text contains can become markup of its own.
"use strict";

(function () {
  function escapeHTML(s) {
    return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }

  // inline renders inline markup in an already escaped line.
  function inline(s) {
    const codes = [];
    s = s.replace(/`([^`]+)`/g, function (_, c) {
      codes.push(c);
      return "\u0000" + (codes.length - 1) + "\u0000";
    });
    s = s.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, function (m, text, url) {
      // url is escaped already; allow only safe schemes.
      if (!/^(https?:\/\/|mailto:)/i.test(url)) return m;
      return '<a href="' + url + '" rel="noopener noreferrer" target="_blank">' + text + "</a>";
    });
    s = s.replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>");
    s = s.replace(/(^|[^*])\*([^*\s][^*]*)\*/g, "$1<em>$2</em>");
    s = s.replace(/(^|\W)_([^_\s][^_]*)_(?=\W|$)/g, "$1<em>$2</em>");
    s = s.replace(/\u0000(\d+)\u0000/g, function (_, i) {
      return "<code>" + codes[Number(i)] + "</code>";
    });
    return s;
  }

  // render returns the HTML of markdown text.
  function render(text) {
    const lines = escapeHTML(String(text || "")).split(/\r?\n/);
    const out = [];
    let para = [];
    let list = null; // "ul" or "ol"
    let code = null;
    function flushPara() {
      if (para.length) out.push("<p>" + inline(para.join(" ")) + "</p>");
      para = [];
    }
    function closeList() {
      if (list) out.push("</" + list + ">");
      list = null;
    }
    for (const raw of lines) {
      const line = raw.replace(/\s+$/, "");
      if (code !== null) {
        if (/^```/.test(line)) {
          out.push("<pre><code>" + code.join("\n") + "</code></pre>");
          code = null;
        } else {
          code.push(raw);
        }
        continue;
      }
      if (/^```/.test(line)) {
        flushPara(); closeList();
        code = [];
        continue;
      }
      let m;
      if ((m = /^(#{1,6})\s+(.*)$/.exec(line))) {
        flushPara(); closeList();
        const n = Math.min(m[1].length + 2, 6); // headings stay small in a chat
        out.push("<h" + n + ">" + inline(m[2]) + "</h" + n + ">");
      } else if ((m = /^\s*[-*+]\s+(.*)$/.exec(line))) {
        flushPara();
        if (list !== "ul") { closeList(); out.push("<ul>"); list = "ul"; }
        out.push("<li>" + inline(m[1]) + "</li>");
      } else if ((m = /^\s*\d+[.)]\s+(.*)$/.exec(line))) {
        flushPara();
        if (list !== "ol") { closeList(); out.push("<ol>"); list = "ol"; }
        out.push("<li>" + inline(m[1]) + "</li>");
      } else if (line === "") {
        flushPara(); closeList();
      } else {
        closeList();
        para.push(line);
      }
    }
    if (code !== null) out.push("<pre><code>" + code.join("\n") + "</code></pre>");
    flushPara(); closeList();
    return out.join("");
  }

  window.batonMarkdown = { render: render, escapeHTML: escapeHTML };
})();
