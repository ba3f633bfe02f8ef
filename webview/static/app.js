// The web view's own script: draws the Mermaid diagrams on load and after
// each live update. Everything else is htmx attributes in the pages.
(function () {
  "use strict";
  function draw() {
    if (!window.mermaid) { return; }
    var nodes = document.querySelectorAll("pre.mermaid:not([data-processed])");
    if (nodes.length === 0) { return; }
    window.mermaid.run({ nodes: nodes }).then(function () {
      document.body.setAttribute("data-diagrams", "drawn");
    }).catch(function (err) {
      // A live update that replaced the diagram while it was drawn is no
      // failure: the new one is drawn after its own swap.
      if (!Array.prototype.some.call(nodes, function (n) { return document.contains(n); })) { return; }
      document.body.setAttribute("data-diagrams", "failed");
      console.error("mermaid:", err);
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (window.mermaid) {
      window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "neutral" });
    }
    draw();
    document.body.addEventListener("htmx:afterSettle", draw);
    // data-live says whether the page is following its event stream.
    document.body.addEventListener("htmx:sseOpen", function () { document.body.dataset.live = "open"; });
    document.body.addEventListener("htmx:sseError", function () { document.body.dataset.live = "lost"; });
  });
})();
