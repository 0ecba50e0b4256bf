// Experiments pages: start a grid and upload a run through the JSON API (api.js), and follow
// each cell's progress until the experiment is finished, when the page is drawn again with
// its results (the server renders the leaderboard, the curves and the misses).
import { request } from "./api.js";
import { poll } from "./poll.js";

function say(id, message) {
  const node = document.getElementById(id);
  if (node) node.textContent = message || "";
}

function problemText(err) {
  const body = err.body || {};
  const fields = Object.keys(body.errors || {}).map((k) => k + ": " + [].concat(body.errors[k]).join(" "));
  return [err.message].concat(fields).join(" · ");
}

function experimentUrl(id) {
  return window.location.pathname.replace(/\/?$/, "/") + id + "/";
}

function checked(form, name) {
  return Array.from(form.querySelectorAll("input[name='" + name + "']:checked")).map((i) => i.value);
}

function startForm(root, form) {
  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    say("experiment-error", "");
    const data = {
      release: Number(form.elements.release.value),
      parsers: checked(form, "parsers"),
      chunkers: form.elements.chunkers.value.split(",").map((s) => s.trim()).filter(Boolean),
      retrievers: checked(form, "retrievers"),
      k: Number(form.elements.k.value),
    };
    try {
      const made = await request("POST", root.dataset.apiStart, data);
      window.location.assign(experimentUrl(made.id));
    } catch (err) {
      say("experiment-error", problemText(err));
    }
  });
}

function listOf(title, problems) {
  const box = document.createElement("div");
  const heading = document.createElement("p");
  heading.textContent = title;
  box.appendChild(heading);
  const list = document.createElement("ul");
  problems.forEach(function (p) {
    const li = document.createElement("li");
    li.textContent = (p.line ? "line " + p.line + ", " : "") + p.field + ": " + p.message;
    list.appendChild(li);
  });
  box.appendChild(list);
  return box;
}

function runForm(root, form) {
  const result = document.getElementById("run-result");
  const commit = document.getElementById("run-commit");
  function body() {
    const data = new FormData();
    ["release", "format", "name", "k"].forEach((name) => data.append(name, form.elements[name].value));
    data.append("file", form.elements.file.files[0]);
    if (form.elements.chunks.files[0]) data.append("chunks", form.elements.chunks.files[0]);
    return data;
  }
  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    say("run-error", "");
    result.replaceChildren();
    commit.hidden = true;
    try {
      const plan = await request("POST", root.dataset.apiPreview, body());
      const summary = document.createElement("p");
      summary.textContent = plan.accepted
        ? plan.questions + " questions, " + plan.chunks + " chunks: ready to score."
        : "This run cannot be stored: " + plan.problems.length + " problem(s).";
      result.appendChild(summary);
      if (plan.problems.length) result.appendChild(listOf("Problems", plan.problems));
      if (plan.unplaced.length) result.appendChild(listOf("Chunks that could not be placed (they count as retrieving nothing relevant)", plan.unplaced));
      commit.hidden = !plan.accepted;
      if (plan.accepted) commit.focus();
    } catch (err) {
      say("run-error", problemText(err));
    }
  });
  commit.addEventListener("click", async function () {
    say("run-error", "");
    try {
      const made = await request("POST", root.dataset.apiCommit, body());
      window.location.assign(experimentUrl(made.id));
    } catch (err) {
      say("run-error", problemText(err));
    }
  });
}

function fill(row, percent) {
  const bar = row.querySelector("[data-cell-fill]");
  bar.style.width = percent + "%"; // through the CSSOM: the CSP refuses style attributes
  bar.parentElement.setAttribute("aria-valuenow", String(percent));
}

function experimentPage(root) {
  document.querySelectorAll("[data-cell]").forEach((row) => fill(row, Number(row.querySelector("[data-cell-fill]").dataset.percent)));
  const cancel = document.getElementById("cancel-experiment");
  if (cancel) {
    cancel.addEventListener("click", async function () {
      try {
        await request("POST", root.dataset.cancel);
        window.location.reload();
      } catch (err) {
        say("cancel-error", problemText(err));
      }
    });
  }
  const rerun = document.getElementById("rerun-experiment");
  if (rerun) {
    rerun.addEventListener("click", async function () {
      try {
        const made = await request("POST", rerun.dataset.rerun);
        window.location.assign(window.location.pathname.replace(/[^/]+\/$/, made.id + "/"));
      } catch (err) {
        say("cancel-error", problemText(err));
      }
    });
  }
  if (root.dataset.finished === "1") return;
  poll(async function () {
    const experiment = await request("GET", root.dataset.api);
    experiment.cells.forEach(function (cell) {
      const row = root.querySelector("[data-cell='" + cell.cell + "']");
      if (!row) return;
      fill(row, cell.percent);
      const status = row.querySelector("[data-cell-status]");
      status.textContent = cell.status;
      status.className = "status " + cell.status;
      row.querySelector("[data-cell-count]").textContent = cell.progress_done + "/" + cell.progress_total;
    });
    say("experiment-status", experiment.status);
    if (["complete", "cancelled", "failed"].includes(experiment.status)) {
      window.location.reload();
      return false;
    }
    return true;
  }, { every: 1000, grow: 1.3, most: 5000, first: 500 });
}

const listPage = document.getElementById("experiments-page");
if (listPage) {
  const start = document.getElementById("experiment-form");
  if (start) startForm(listPage, start);
  const run = document.getElementById("run-form");
  if (run) runForm(listPage, run);
}
const onePage = document.getElementById("experiment-page");
if (onePage) experimentPage(onePage);
