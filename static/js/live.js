/* Live changes on the item and document pages: poll the workspace's changes feed for what
   happened since the page last looked ([data-live]: data-live-url, data-live-after), say who
   did what in the banner, and hand each change to the page as a "gw:change" event (item.js
   merges, the document page redraws its highlights). Changes this very tab made are skipped;
   the same person's other tab is named as such, never as "someone else". */
import { el, request, words } from "./api.js";
import { poll } from "./poll.js";
import { withQuery } from "./urls.js";

const box = document.querySelector("[data-live]");
if (box) follow(box);

function follow(box) {
  const url = box.dataset.liveUrl;
  const every = Number(box.dataset.liveEvery || 3000);
  const list = box.querySelector("[data-live-list]");
  const onDocument = box.dataset.liveScope === "document";
  let after = Number(box.dataset.liveAfter || 0);

  function describe(change) {
    const who = change.source === "you" ? "You, in another tab," : (change.by || "Someone");
    let text = who + " " + change.what;
    if (onDocument) text += " on " + change.evalset + "/" + change.item;
    if (change.quote) text += ": “" + (change.quote.length > 80 ? change.quote.slice(0, 79) + "…" : change.quote) + "”";
    if (change.state) text += " (now " + words.state(change.state) + ")";
    const at = new Date(change.at);
    return text + " · " + at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  }

  function show(changes) {
    for (const change of changes) {
      const li = el("li", "live-change " + change.source, describe(change));
      li.dataset.liveChange = change.kind;
      list.prepend(li);
    }
    while (list.children.length > 5) list.lastElementChild.remove();
    box.hidden = false;
  }

  /* One look at the feed; a full page of news is followed by the next at once. */
  async function look() {
    const body = await request("GET", withQuery(url, { after }));
    after = body.last;
    const news = body.changes.filter((c) => c.source !== "this_tab");
    if (news.length) {
      show(news);
      for (const change of news) document.dispatchEvent(new CustomEvent("gw:change", { detail: change }));
      if (onDocument && window.groundworkDocument) window.groundworkDocument.refreshAnchors().catch(() => {});
    }
    return body.more ? 0 : undefined;
  }

  const dismiss = box.querySelector("[data-live-dismiss]");
  if (dismiss) dismiss.addEventListener("click", () => { box.hidden = true; list.replaceChildren(); });
  poll(look, { every });
}
