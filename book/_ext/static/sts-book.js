// Phone-first reading aids (book/_ext/sts_book/fixes.py, fix 6); sts-book.css has the matching rules.
// This script writes no markup and no class (book/_ext/sts_book/panels.py writes both); what it keeps is state, in
// data- attributes.
// 1. Figures fit the column at every width. So that a phone reader can still see the details of a
//    multi-panel figure, the book writes each figure of a cell output in a link to its image: a tap (or a
//    click, or Enter) opens it at full size, where the browser pans and zooms it. A <picture> has a rendering
//    per width: its link follows the one the browser chose. (A static panel's script follows its current frame.)
// 2. A display equation or table wider than the column scrolls inside its own box. So that a reader
//    sees that there is more, such a box gets data-sts-more="right" (a shadow on its right edge) while part
//    of it is hidden on the right, "left" while part is hidden on the left, "left right" for both; it is
//    made focusable, so that a keyboard reader can scroll it too.
// 3. A figure or a panel has a light and a dark picture (sts_lib.presentation.render; pydata-sphinx-theme shows
//    the one of the page's theme). The dark one's addresses wait in data-src/data-srcset until the page is dark
//    (the theme's data-theme on <html>, set at load and by its switch), so a light page never downloads the dark
//    pictures; a panel's script keeps the hidden theme's addresses waiting likewise when a control moves.
(function () {
  "use strict";
  // A picture's addresses wait in data-src/data-srcset while its theme is not shown (a dark picture on a light page;
  // a panel's picture of the hidden theme after a move); once its <img> is shown they move into place.
  function shownPictures() {
    Array.prototype.forEach.call(document.querySelectorAll("picture"), function (picture) {
      var img = picture.querySelector("img[data-src]");
      if (!img || getComputedStyle(img).display === "none") return;
      Array.prototype.forEach.call(picture.querySelectorAll("source[data-srcset]"), function (s) {
        s.srcset = s.dataset.srcset;           // before the <img>'s src, so a phone fetches only its rendering
        s.removeAttribute("data-srcset");
      });
      img.src = img.dataset.src;
      img.removeAttribute("data-src");
    });
  }
  new MutationObserver(shownPictures).observe(document.documentElement,
                                              {attributes: true, attributeFilter: ["data-theme"]});
  function follow(img) {
    // a dark picture not yet fetched has no address: its link keeps the one it was written with
    var link = img.closest("a.sts-figure-link");
    if (!link || img.closest(".sts-static-panel")) return;   // a panel's script follows its frames
    var point = function () { link.href = img.currentSrc || img.src || link.href; };
    img.addEventListener("load", point);
    if (img.complete) point();
  }
  var SCROLLERS = 'article mjx-container[display="true"], article span.math, article .cell_output table, ' +
                  'article table.table';
  // What a box hides, read; then shown. Reads and writes are kept apart: markAll reads every box before it writes
  // one attribute, so the page is laid out once, not once per box (a chapter has hundreds of formulas).
  function measure(box) { return {box: box, hidden: box.scrollWidth - box.clientWidth, left: box.scrollLeft}; }
  function show(m) {
    var more = [];
    if (m.hidden > 1 && m.left > 1) more.push("left");
    if (m.hidden > 1 && m.left < m.hidden - 1) more.push("right");
    var cue = more.join(" ");
    if (cue !== (m.box.getAttribute("data-sts-more") || "")) {
      if (cue) m.box.setAttribute("data-sts-more", cue);
      else m.box.removeAttribute("data-sts-more");
    }
    // A box that scrolls must be reachable from the keyboard (arrow keys scroll it once it has focus), even by
    // one pixel (axe-core's scrollable-region-focusable counts any scrolling box; the shadow waits for 2 px).
    // A table has its tab stop from the build (book/_ext/sts_book/fixes.py, fix 13), so that one in a section not laid out
    // yet is reachable too; once measured, one that does not scroll gives it up.
    if (m.hidden > 0 && m.box.tabIndex !== 0) m.box.tabIndex = 0;
    else if (m.hidden <= 0 && m.box.tagName === "TABLE" && m.box.hasAttribute("data-sts-scroll")) m.box.tabIndex = -1;
  }
  function mark(box) { show(measure(box)); }
  // A box shown later (a solution or a dropdown opened by the reader) is laid out only then: a ResizeObserver
  // marks it, and gives it its tabindex, when its size changes from nothing.
  var observer = window.ResizeObserver ? new ResizeObserver(function (entries) {
    entries.map(function (entry) { return measure(entry.target); }).forEach(show);
  }) : null;
  // Sections below the first screen are laid out only when the reader nears them (sts-book.css: content-visibility:
  // auto, most of a phone's work on a first visit saved). Measuring a box in such a section would lay the section
  // out, so a box is measured when its section is shown (contentvisibilityautostatechange), not before; until then
  // it has nothing to cue. checkVisibility reads the style only, never the layout.
  function shown(box) { return !box.checkVisibility || box.checkVisibility({contentVisibilityAuto: true}); }
  // The theme gives a code block or a cell output that scrolls a tab stop (pydata-sphinx-theme's
  // addTabStopsToScrollableElements); book/_ext/sts_book/fixes.py (fix 10) has it skip the sections not yet laid out,
  // and this script does the same for them when they are shown.
  var THEME_STOPS = "pre, .nboutput > .output_area, .cell_output > .output, .jp-RenderedHTMLCommon, " +
                    ".pst-scrollable-table-container";
  function markWithin(root) {
    var boxes = Array.prototype.filter.call(root.querySelectorAll(SCROLLERS), shown);
    var stops = Array.prototype.filter.call(root.querySelectorAll(THEME_STOPS), shown);
    var scrolls = stops.map(function (el) {   // all reads first, then all writes
      return el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight;
    });
    boxes.map(measure).forEach(show);
    stops.forEach(function (el, i) { el.tabIndex = scrolls[i] ? 0 : -1; });
    if (observer) boxes.forEach(function (box) {
      if (!box.stsObserved) { observer.observe(box); box.stsObserved = true; }
    });
  }
  function markAll() { markWithin(document); }
  // WCAG 2.5.3 (label in name; axe-core's label-content-name-mismatch): a control's accessible name must contain
  // the words it shows. The theme's search button is named "Search" but shows "Search" and its shortcut, and
  // myst-nb's folded cells are named "Toggle hidden content" but show "Show code cell source": dropping the
  // aria-label names each by what it shows.
  function nameByText() {
    var named = 'button.search-button-field[aria-label], summary[aria-label="Toggle hidden content"]';
    Array.prototype.forEach.call(document.querySelectorAll(named), function (el) {
      if (el.textContent.trim()) el.removeAttribute("aria-label");
    });
  }
  // The theme's tooltips (the colour switch's "Color mode") open on hover and focus and close on leaving both. A tap
  // is both, and a phone never leaves: the tooltip stayed over the text. Where nothing hovers (a touch screen) the
  // tooltips are off (each control is named by its aria-label); elsewhere a click closes its tooltip.
  function tooltipsThatLeave() {
    var Tooltip = window.bootstrap && window.bootstrap.Tooltip;
    if (!Tooltip) return;
    var noHover = window.matchMedia && window.matchMedia("(hover: none)").matches;
    Array.prototype.forEach.call(document.querySelectorAll('[data-bs-toggle="tooltip"]'), function (el) {
      var tip = Tooltip.getInstance(el);
      if (!tip) return;
      if (noHover) tip.disable();
      else el.addEventListener("click", function () { tip.hide(); });
    });
  }
  function start() {
    tooltipsThatLeave();
    shownPictures();
    nameByText();
    Array.prototype.forEach.call(document.querySelectorAll("article .cell_output picture img"), follow);
    // scroll events do not bubble, but a listener on the document sees them in the capture phase
    document.addEventListener("scroll", function (e) {
      if (e.target.matches && e.target.matches(SCROLLERS)) mark(e.target);
    }, true);
    window.addEventListener("resize", markAll);
    document.addEventListener("contentvisibilityautostatechange", function (e) {
      if (!e.skipped) markWithin(e.target);
    }, true);
    // Built without Node.js (book/_ext/sts_book/mathjax.py), the book's MathJax typesets in the browser, after this script
    // runs: mark the equations once it is done
    var mj = window.MathJax;
    if (mj && mj.startup && mj.startup.promise) mj.startup.promise.then(markAll);
    window.addEventListener("load", markAll);
    // MathJax's web fonts arrive after the page is laid out (a cold cache: after "load" too), and a formula laid out in a
    // fallback font can be wider than it will be: mark every box again once each batch of fonts has loaded, so a
    // cue set too early is cleared (the ResizeObserver sees the box, not its content, change size).
    if (document.fonts) {
      document.fonts.ready.then(markAll);
      if (document.fonts.addEventListener) document.fonts.addEventListener("loadingdone", markAll);
    }
    markAll();
  }
  // A deferred script runs before DOMContentLoaded, and MathJax (deferred too, later on the page) is
  // defined only after it: start then.
  if (document.readyState === "complete") start();
  else document.addEventListener("DOMContentLoaded", start);
})();
