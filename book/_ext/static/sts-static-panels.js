// The static book's panels (book/_ext/sts_book/panels.py, sts_lib/chapters/static_panel.py): native controls
// over pictures drawn at build time by the panel's own draw function. Moving a control looks its
// position up in the panel's data and shows that frame, fetched only now (frames load on demand).
// No formula lives here: a setting without a precomputed frame says so instead of guessing. The book writes the
// markup (book/_ext/sts_book/panels.py): each picture element names its layout (data-layout), and a frame holds a
// picture per layout, so this script knows no layout, theme or width. It writes no class: the panel's state is
// data-sts-state ("ready", "loading"). The panel's data is sts_lib.presentation.payload.ScriptPanel: every field is
// read by its name (tests/unit/test_payload.py holds this script to that schema).
"use strict";
(function () {
  function setUp(panel) {
    const script = panel.querySelector("script.sts-panel-data");
    if (!script) return;
    const data = JSON.parse(script.textContent);
    const inputs = Array.from(panel.querySelectorAll("[data-control]"));
    const imgs = Array.from(panel.querySelectorAll("img.sts-panel-img"));   // one per theme the frames are drawn in
    const caption = panel.querySelector(".sts-panel-caption");
    const status = panel.querySelector(".sts-panel-status");
    const readout = (input) => panel.querySelector(`output[for="${input.id}"]`);
    // A tap on a picture (in its link from the start: moving it would restart its download) opens the
    // current frame at full size, where a phone pans and zooms it.
    imgs.forEach((im) => {
      const link = im.closest("a.sts-figure-link");
      if (link) im.addEventListener("load", () => { link.href = im.currentSrc || im.getAttribute("src"); });
    });
    // Point an element at a frame's picture for its layout. The picture of the theme not shown (its <img> hidden by
    // the theme) keeps its address waiting in data-src/data-srcset, so a move fetches one frame, the one shown;
    // sts-book.js moves it into place when the theme changes.
    function point(el, attr, picture) {
      if (!picture) return;
      const img = el.tagName === "IMG" ? el : el.parentNode.querySelector("img");
      if (getComputedStyle(img).display === "none") {
        el.setAttribute(`data-${attr}`, picture.src);
        el.removeAttribute(attr);
      } else {
        el.setAttribute(attr, picture.src);
        el.removeAttribute(`data-${attr}`);
      }
      el.dataset.textPx = picture.text_px;
      el.setAttribute("width", picture.width);
      el.setAttribute("height", picture.height);
    }

    function show(moved) {
      if (data.mode === "one" && moved !== undefined) {
        // One control at a time: the others go back to where the panel started.
        inputs.forEach((input, j) => { if (j !== moved) input.value = String(data.controls[j].default); });
      }
      const position = inputs.map((input) => Number(input.value));
      inputs.forEach((input, j) => {
        const label = data.controls[j].labels[position[j]];
        const out = readout(input);
        if (out) out.textContent = label;
        if (input.type === "range") input.setAttribute("aria-valuetext", label);
      });
      const index = data.lookup[position.join(",")];
      if (index === undefined) {
        status.textContent = "This combination was not drawn when the book was built; run the notebook to see it.";
        return;
      }
      const frame = data.frames[index];
      // A control reads the value its picture was drawn for: a setting clamped into range says so.
      inputs.forEach((input, j) => {
        const raw = data.controls[j].labels[position[j]], shown = frame.shown ? frame.shown[j] : raw;
        const out = readout(input);
        if (out) out.textContent = shown === raw ? raw : `${shown} (${raw} is out of range)`;
        if (input.type === "range") input.setAttribute("aria-valuetext", shown);
      });
      if (frame.error) {              // as the live panel does: say why, keep the last picture
        status.textContent = frame.error;
        return;
      }
      status.textContent = "";
      panel.dataset.stsState = "loading";
      imgs.forEach((im) => { im.onload = im.onerror = () => { panel.dataset.stsState = "ready"; }; });
      panel.querySelectorAll("picture source[data-layout]").forEach((source) => {
        point(source, "srcset", frame.pictures[source.dataset.layout]);   // before the <img>: a phone fetches its own
      });
      imgs.forEach((im) => {
        point(im, "src", frame.pictures[im.dataset.layout]);
        im.alt = frame.alt;
      });
      caption.textContent = frame.caption;
    }
    // "input" while a slider moves or a menu changes; "change" too, for scripts that set a value and fire only it.
    inputs.forEach((input, j) => ["input", "change"].forEach((type) => input.addEventListener(type, () => show(j))));
    panel.dataset.stsState = "ready";
  }
  function init() { document.querySelectorAll(".sts-static-panel").forEach(setUp); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
