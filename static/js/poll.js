/* Asking the server again until something is done: the one polling loop of the front end
   (parses on the workspace page, resolutions on the item and document pages, the changes
   feed, the background-work panel, a release's build, the rendered view being prepared).

   poll(ask, options) calls `await ask()` after a wait, and again, until ask answers false,
   stop() is called, or `rounds` asks were made. What ask answers sets the next wait:
     false          stop;
     a number       wait that many ms (0: ask again at once, say when a page of news was full);
     anything else  the schedule: `every` ms at first, times `grow` after each ask, up to `most`.
   A throw counts as a failure: the next wait is that many times longer (at most 10 times), so
   an away server is asked less often, and the schedule goes on.
   While the tab is hidden, `hidden: "slow"` (the default) waits five times longer and
   `hidden: "pause"` does not ask at all; when the tab shows again it asks at once.

   Returns { now(), soon(ms), stop(), done }: ask at once; ask within ms (never later than
   already planned); stop; a promise settled when polling stops. */

const HIDDEN_SLOWER = 5;
const MOST_FAILURE_FACTOR = 10;

export function poll(ask, options = {}) {
  const every = options.every ?? 3000;
  const grow = options.grow ?? 1;
  const most = options.most ?? every;
  const rounds = options.rounds ?? Infinity;
  const hidden = options.hidden ?? "slow";
  const page = options.page ?? globalThis.document;
  let wait = every;
  let asked = 0;
  let failures = 0;
  let timer = null;
  let due = Infinity; // when the planned ask runs (performance clock)
  let running = false;
  let again = false; // now() or soon() came while an ask was running
  let stopped = false;
  let finish;
  const done = new Promise((resolve) => { finish = resolve; });

  const isHidden = () => Boolean(page && page.hidden);

  function plan(ms) {
    clearTimeout(timer);
    timer = null;
    due = Infinity;
    if (stopped || (hidden === "pause" && isHidden())) return;
    const slower = hidden === "slow" && isHidden() ? HIDDEN_SLOWER : 1;
    const paced = ms * Math.min(MOST_FAILURE_FACTOR, 1 + failures) * slower;
    due = now() + paced;
    timer = setTimeout(run, paced);
  }

  async function run() {
    timer = null;
    due = Infinity;
    if (stopped) return;
    if (running) { again = true; return; }
    running = true;
    asked += 1;
    let answer;
    try {
      answer = await ask();
      failures = 0;
    } catch (err) {
      failures += 1;
    }
    running = false;
    if (stopped) return;
    if (answer === false || asked >= rounds) { stop(); return; }
    if (again) { again = false; plan(0); return; }
    if (typeof answer === "number") { plan(answer); return; }
    const next = wait;
    wait = Math.min(most, wait * grow);
    plan(next);
  }

  function stop() {
    if (stopped) return;
    stopped = true;
    clearTimeout(timer);
    timer = null;
    if (page) page.removeEventListener("visibilitychange", onVisibility);
    finish();
  }

  function soon(ms) {
    if (stopped) return;
    if (running) { again = true; return; }
    if (now() + ms < due) plan(ms);
  }

  function onVisibility() {
    if (isHidden()) { if (hidden === "pause") plan(0); } // plan() holds off while hidden
    else soon(0);
  }

  if (page) page.addEventListener("visibilitychange", onVisibility);
  plan(options.first ?? every);
  return { now: () => soon(0), soon, stop, done };
}

function now() {
  return globalThis.performance ? performance.now() : Date.now();
}
