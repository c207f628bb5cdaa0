// The operation page of a running operation follows its journal: the
// server streams each new record (Server-Sent Events) and the timeline
// as it now stands, rendered as on the page, which replaces the old one.
(function () {
  "use strict";
  var box = document.getElementById("timeline");
  if (!box || !box.dataset.live || !window.EventSource) {
    return;
  }
  var es = new EventSource(box.dataset.live);
  es.addEventListener("timeline", function (e) {
    box.innerHTML = e.data;
    var note = box.querySelector(".live-note");
    if (note) {
      note.textContent = "— live";
    }
  });
  es.addEventListener("end", function () {
    es.close();
    box.removeAttribute("data-live");
  });
})();
