/* Workspace page: the "Background work" panel. Shows how many parses, resolutions and
   releases wait and how fast resolutions drain (from /api/workspaces/<ws>/pending/).
   Refreshes every few seconds while anything waits, once a minute when idle, at once when
   a document row appears or changes (an upload on this page), and not while the tab is
   hidden. */
import { request } from "./api.js";
import { poll } from "./poll.js";
import { api } from "./urls.js";

const panel = document.querySelector("[data-backlog]");
if (panel) follow(panel);

function follow(panel) {
  const url = api.pending(panel.dataset.workspace);
  const BUSY_MS = 3000;
  const IDLE_MS = 60000;
  const part = (name) => panel.querySelector("[data-backlog-" + name + "]");
  const refreshButton = part("refresh");

  function duration(seconds) {
    if (seconds < 60) return Math.max(1, Math.round(seconds)) + " s";
    if (seconds < 3600) return Math.round(seconds / 60) + " min";
    const h = Math.floor(seconds / 3600);
    return h + " h " + Math.round((seconds - h * 3600) / 60) + " min";
  }

  function drainWords(b) {
    const done = b.resolutions_done_last_minute;
    if (!b.resolutions_missing) return done ? done + " done in the last minute" : "";
    if (!done) return "none done in the last minute: is a worker running?";
    let words = done + " done in the last minute";
    if (b.resolutions_per_second >= 1) words += " (" + Math.round(b.resolutions_per_second) + "/s)";
    if (b.resolutions_eta_seconds !== null) words += ", about " + duration(b.resolutions_eta_seconds) + " left";
    return words;
  }

  function render(b) {
    const busy = b.waiting > 0;
    panel.dataset.state = busy ? "busy" : "idle";
    part("idle").hidden = busy;
    part("kinds").hidden = !busy;
    part("parses").textContent = b.parses_queued + " waiting, " + b.parses_running + " running";
    part("resolutions").textContent = b.resolutions_missing + " waiting";
    part("drain").textContent = drainWords(b);
    part("releases").textContent = b.releases_queued + " waiting, " + b.releases_building + " building";
    const counts = {
      parses: b.parses_queued + b.parses_running,
      resolutions: b.resolutions_missing,
      releases: b.releases_queued + b.releases_building,
    };
    for (const [kind, n] of Object.entries(counts)) part("kind='" + kind + "'").toggleAttribute("data-busy", n > 0);
    const orphans = part("orphans");
    const n = b.anchors_waiting_for_their_file;
    orphans.hidden = !n;
    orphans.textContent = n === 1 ? "1 imported anchor waits for its file to be uploaded."
      : n + " imported anchors wait for their files to be uploaded.";
  }

  const waitNext = () => (panel.dataset.state === "busy" ? BUSY_MS : IDLE_MS);

  async function refresh() {
    try {
      render(await request("GET", url));
      part("updated").textContent = "updated " + new Date().toLocaleTimeString();
      refreshButton.hidden = true;
    } catch (err) {
      part("updated").textContent = "could not refresh (" + err.message + "); trying again";
      refreshButton.hidden = false;
    }
    return waitNext();
  }

  const initial = document.getElementById("gw-backlog");
  if (initial) render(JSON.parse(initial.textContent));
  const poller = poll(refresh, { first: waitNext(), every: BUSY_MS, hidden: "pause" });
  refreshButton.addEventListener("click", poller.now);
  /* A change in the documents table pulls the next refresh forward, never pushes it back. */
  const rows = document.querySelector("[data-doc-rows]");
  if (rows) new MutationObserver(() => poller.soon(500)).observe(rows, { childList: true, subtree: true, attributes: true, attributeFilter: ["data-status"] });
}
