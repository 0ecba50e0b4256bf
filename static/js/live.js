/* Live changes on the item and document pages: poll /api/workspaces/{ws}/changes/ for what
   happened since the page last looked ([data-live]: data-live-url, data-live-after), say who
   did what in the banner, and hand each change to the page as a "gw:change" event (item.js
   merges, the document page redraws its highlights). Changes this very tab made are skipped;
   the same person's other tab is named as such, never as "someone else". */
(function () {
  "use strict";
  const G = window.Groundwork;
  const box = document.querySelector("[data-live]");
  if (!box) return;
  const url = box.dataset.liveUrl;
  const every = Number(box.dataset.liveEvery || 3000);
  const list = box.querySelector("[data-live-list]");
  const onDocument = box.dataset.liveScope === "document";
  let after = Number(box.dataset.liveAfter || 0);
  let timer = null;
  let failures = 0;

  function describe(change) {
    const who = change.source === "you" ? "You, in another tab," : (change.by || "Someone");
    let text = who + " " + change.what;
    if (onDocument) text += " on " + change.evalset + "/" + change.item;
    if (change.quote) text += ": “" + (change.quote.length > 80 ? change.quote.slice(0, 79) + "…" : change.quote) + "”";
    if (change.state) text += " (now " + G.words.state(change.state) + ")";
    const at = new Date(change.at);
    return text + " · " + at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  function show(changes) {
    for (const change of changes) {
      const li = G.el("li", "live-change " + change.source, describe(change));
      li.dataset.liveChange = change.kind;
      list.prepend(li);
    }
    while (list.children.length > 5) list.lastElementChild.remove();
    box.hidden = false;
  }

  function schedule(delay) {
    clearTimeout(timer);
    const wait = delay != null ? delay : (document.hidden ? every * 5 : every) * Math.min(10, 1 + failures);
    timer = setTimeout(poll, wait);
  }

  async function poll() {
    let more = false;
    try {
      const body = await G.request("GET", url + (url.includes("?") ? "&" : "?") + "after=" + after);
      failures = 0;
      after = body.last;
      more = body.more;
      const news = body.changes.filter((c) => c.source !== "this_tab");
      if (news.length) {
        show(news);
        for (const change of news) document.dispatchEvent(new CustomEvent("gw:change", { detail: change }));
        if (onDocument && window.groundworkDocument) window.groundworkDocument.refreshAnchors().catch(() => {});
      }
    } catch (err) {
      failures += 1; // the server is away: ask again, less often
    }
    schedule(more ? 0 : null);
  }

  const dismiss = box.querySelector("[data-live-dismiss]");
  if (dismiss) dismiss.addEventListener("click", () => { box.hidden = true; list.replaceChildren(); });
  document.addEventListener("visibilitychange", () => { if (!document.hidden) schedule(0); });
  schedule();
})();
