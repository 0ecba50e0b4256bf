// The one polling loop of the front end (static/js/poll.js): asks until told to stop, grows
// its wait, backs off while the server fails, and slows or pauses while the tab is hidden.
import assert from "node:assert/strict";
import { test } from "node:test";

import { poll } from "../../static/js/poll.js";

/* A stand-in for `document`: hidden or not, and its visibilitychange listeners. */
function fakePage(hidden = false) {
  const listeners = new Set();
  return {
    hidden,
    addEventListener: (type, fn) => listeners.add(fn),
    removeEventListener: (type, fn) => listeners.delete(fn),
    show() { this.hidden = false; listeners.forEach((fn) => fn()); },
    hide() { this.hidden = true; listeners.forEach((fn) => fn()); },
    listening: () => listeners.size,
  };
}

/* Let the timers and the promises they start run, as far as `ms` of fake time. */
async function pass(t, ms) {
  for (let done = 0; done < ms; done += 10) {
    t.mock.timers.tick(10);
    for (let i = 0; i < 5; i++) await Promise.resolve();
  }
}

test("it asks until the answer is false, then stops listening", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const page = fakePage();
  let asked = 0;
  const poller = poll(async () => (++asked < 3), { every: 100, page });
  await pass(t, 1000);
  assert.equal(asked, 3);
  assert.equal(page.listening(), 0);
  await poller.done;
});

test("it waits longer each time, up to the most", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const waits = [];
  let last = 0, now = 0;
  poll(async () => { waits.push(now - last); last = now; }, { first: 0, every: 100, grow: 2, most: 300, rounds: 5, page: fakePage() });
  for (; now < 2000; now += 10) await pass(t, 10);
  assert.deepEqual(waits, [0, 100, 200, 300, 300]);
});

test("it asks again at once when the answer says so", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  let asked = 0;
  poll(async () => { asked += 1; return asked < 4 ? 0 : false; }, { first: 0, every: 10_000, page: fakePage() });
  await pass(t, 50);
  assert.equal(asked, 4);
});

test("it asks less often while the server fails, and as before once it answers", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  let asked = 0;
  poll(async () => { asked += 1; if (asked <= 2) throw new Error("away"); }, { every: 100, page: fakePage() });
  await pass(t, 100);
  assert.equal(asked, 1); // failed: the next wait is 200
  await pass(t, 190);
  assert.equal(asked, 1);
  await pass(t, 20);
  assert.equal(asked, 2); // failed again: 300
  await pass(t, 300);
  assert.equal(asked, 3); // answered: back to 100
  await pass(t, 100);
  assert.equal(asked, 4);
});

test("it asks five times less often while the tab is hidden, and at once when it shows", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const page = fakePage(true);
  let asked = 0;
  poll(async () => { asked += 1; }, { every: 100, page });
  await pass(t, 490);
  assert.equal(asked, 0);
  await pass(t, 20);
  assert.equal(asked, 1);
  page.show();
  await pass(t, 10);
  assert.equal(asked, 2);
});

test("it does not ask at all while the tab is hidden when told to pause", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  const page = fakePage();
  let asked = 0;
  poll(async () => { asked += 1; }, { every: 100, hidden: "pause", page });
  await pass(t, 100);
  assert.equal(asked, 1);
  page.hide();
  await pass(t, 5000);
  assert.equal(asked, 1);
  page.show();
  await pass(t, 10);
  assert.equal(asked, 2);
});

test("it brings the next ask forward but never pushes it back", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  let asked = 0;
  const poller = poll(async () => { asked += 1; }, { every: 1000, page: fakePage() });
  poller.soon(50);
  poller.soon(5000);
  await pass(t, 60);
  assert.equal(asked, 1);
  poller.stop();
  await pass(t, 3000);
  assert.equal(asked, 1);
});

test("it stops after as many asks as it is allowed", async (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  let asked = 0;
  const poller = poll(async () => { asked += 1; }, { every: 10, rounds: 3, page: fakePage() });
  await pass(t, 500);
  assert.equal(asked, 3);
  await poller.done;
});
