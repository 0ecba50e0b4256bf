// Releases and imports pages: create a release, follow its build, download, compare;
// preview an import, then confirm it. Everything goes through the JSON API (api.js).
import { humanSize, request } from "./api.js";
import { poll } from "./poll.js";

function el(tag, attrs) {
  const node = document.createElement(tag);
  Object.keys(attrs || {}).forEach(function (key) {
    if (key === "text") node.textContent = attrs[key];
    else if (key === "className") node.className = attrs[key];
    else node.setAttribute(key, attrs[key]);
  });
  for (let i = 2; i < arguments.length; i++) {
    const child = arguments[i];
    if (child === null || child === undefined) continue;
    node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

/* A note or problem as the server words it, where `name` in backticks (a column, a key)
   is shown as code rather than as a backtick. */
function prose(tag, text, prefix) {
  const node = el(tag, {});
  if (prefix) node.appendChild(document.createTextNode(prefix));
  String(text).split("`").forEach(function (part, i) {
    if (!part) return;
    node.appendChild(i % 2 ? el("code", { text: part }) : document.createTextNode(part));
  });
  return node;
}

/* Groundwork.request, answered as {ok, status, body} instead of thrown. */
function send(method, url, data) {
  return request(method, url, data).then(
    function (body) { return { ok: true, status: 200, body: body }; },
    function (err) { return { ok: false, status: err.status, body: err.body }; });
}

// -- releases page -------------------------------------------------------------------------

function releasesPage(root) {
  const api = root.dataset.api;
  const rows = document.getElementById("release-rows");
  const table = rows.closest("table");
  const releases = {};
  JSON.parse(document.getElementById("releases-data").textContent).forEach(function (r) {
    releases[r.version] = r;
  });

  function row(r) {
    const status = el("td", {},
      el("span", { className: "status " + r.status, text: r.status }));
    if (r.status === "queued" || r.status === "building") {
      const bar = el("span", { className: "bar", role: "progressbar", "aria-valuemin": "0",
        "aria-valuemax": "100", "aria-valuenow": String(r.percent),
        "aria-label": "build progress of version " + r.version });
      const fill = el("span");
      fill.style.width = r.percent + "%"; // through the CSSOM: the CSP refuses style attributes
      bar.appendChild(fill);
      status.appendChild(el("span", { text: " " + r.percent + "%" }));
      status.appendChild(bar);
    }
    if (r.error) status.appendChild(el("p", { className: "form-error", text: r.error }));
    const version = el("td", {}, el("strong", { text: "v" + r.version }));
    if (r.includes_unapproved) {
      version.appendChild(el("br"));
      version.appendChild(el("span", { className: "tag", text: "includes " + r.include_states.join(", ") }));
    }
    const files = el("ul");
    r.files.forEach(function (f) {
      files.appendChild(el("li", {},
        el("a", { href: f.url, download: f.filename, text: f.filename }),
        " (" + humanSize(f.size) + ")"));
    });
    const notes = el("ul", { className: "notes" });
    r.notes.forEach(function (n) { notes.appendChild(prose("li", n)); });
    r.files.forEach(function (f) {
      f.notes.forEach(function (n) { notes.appendChild(prose("li", n, f.format + ": ")); });
    });
    const made = (r.created_by || "someone") + ", " + new Date(r.created_at).toLocaleString();
    const perKind = Object.keys(r.gold_parsers || {}).map(function (k) { return k + " " + r.gold_parsers[k]; }).join(", ");
    const gold = r.gold_parser ? " · gold: " + r.gold_parser : perKind ? " · gold: " + perKind : "";
    return el("tr", { "data-version": String(r.version) },
      version, status, el("td", { text: made }),
      el("td", { text: r.item_count + gold }), el("td", {}, files), el("td", {}, notes));
  }

  function render() {
    const versions = Object.keys(releases).map(Number).sort(function (a, b) { return b - a; });
    rows.textContent = "";
    versions.forEach(function (v) { rows.appendChild(row(releases[v])); });
    table.hidden = versions.length === 0;
    document.getElementById("no-releases").hidden = versions.length > 0;
    const ready = versions.filter(function (v) { return releases[v].status === "ready"; });
    const compare = document.getElementById("compare");
    compare.hidden = ready.length < 2;
    ["compare-from", "compare-to"].forEach(function (id, index) {
      const select = document.getElementById(id);
      const keep = select.value;
      select.textContent = "";
      ready.forEach(function (v) { select.appendChild(el("option", { value: String(v), text: "v" + v })); });
      if (keep) select.value = keep;
      else if (ready.length > 1) select.value = String(index === 0 ? ready[1] : ready[0]);
    });
  }

  function building(version) {
    const r = releases[version];
    return Boolean(r) && (r.status === "queued" || r.status === "building");
  }
  /* Ask after a release until its build is done (ready or failed). */
  function follow(version) {
    if (!building(version)) return;
    poll(async function () {
      const res = await send("GET", releases[version].url);
      if (res.ok) { releases[version] = res.body; render(); }
      return building(version);
    }, { every: 800 });
  }

  const form = document.getElementById("release-form");
  if (form) {
  // Nothing approved and no other state ticked: the release would be refused, so the
  // button is disabled with the reason until there is something to release.
  const createButton = form.querySelector("[data-create-release]");
  const whyNot = form.querySelector("[data-why-no-release]");
  const updateCreate = function () {
    const extra = Array.prototype.reduce.call(form.querySelectorAll("input[name=include_states]:checked"),
      function (sum, box) { return sum + Number(box.dataset.count || 0); }, 0);
    const empty = Number(createButton.dataset.approved) + extra === 0;
    createButton.disabled = empty;
    whyNot.hidden = !empty;
  };
  form.querySelectorAll("input[name=include_states]").forEach(function (box) { box.addEventListener("change", updateCreate); });
  form.addEventListener("submit", function (event) {
      event.preventDefault();
      const error = document.getElementById("release-error");
      error.textContent = "";
      const checked = function (name) {
        return Array.prototype.map.call(
          form.querySelectorAll("input[name=" + name + "]:checked"), function (i) { return i.value; });
      };
      const body = { formats: checked("formats") };
      const gold = {};
      form.querySelectorAll("[data-gold-kind]").forEach(function (select) {
        if (select.value) gold[select.dataset.goldKind] = select.value;
      });
      if (Object.keys(gold).length) body.gold_parsers = gold;
      const extra = checked("include_states");
      if (extra.length) body.include_states = ["approved"].concat(extra);
      const button = form.querySelector("button[type=submit]");
      button.disabled = true;
      send("POST", api, body).then(function (res) {
        updateCreate();
        if (!res.ok) { error.textContent = res.body.detail || "the release could not be made"; return; }
        releases[res.body.version] = res.body;
        render();
        follow(res.body.version);
      });
    });
  }

  document.getElementById("compare-form").addEventListener("submit", function (event) {
    event.preventDefault();
    const from = document.getElementById("compare-from").value;
    const to = document.getElementById("compare-to").value;
    const out = document.getElementById("compare-result");
    send("GET", releases[from].url + "compare/" + to + "/").then(function (res) {
      out.textContent = "";
      if (!res.ok) { out.appendChild(el("p", { className: "form-error", text: res.body.detail })); return; }
      const c = res.body;
      out.appendChild(el("p", { text: "v" + c.from + " → v" + c.to + ": " + c.added.length + " added, " +
        c.removed.length + " removed, " + c.changed.length + " changed, " + c.unchanged + " unchanged." }));
      if (c.added.length) out.appendChild(el("p", { text: "Added: " + c.added.join(", ") }));
      if (c.removed.length) out.appendChild(el("p", { text: "Removed: " + c.removed.join(", ") }));
      if (c.changed.length) {
        const list = el("table", { className: "grid" },
          el("thead", {}, el("tr", {}, el("th", { text: "Item" }), el("th", { text: "Field" }),
            el("th", { text: "Before" }), el("th", { text: "After" }))));
        const tbody = el("tbody");
        c.changed.forEach(function (item) {
          Object.keys(item.fields).forEach(function (name) {
            const f = item.fields[name];
            tbody.appendChild(el("tr", {}, el("td", { text: item.id }), el("td", { text: name }),
              el("td", {}, el("code", { text: JSON.stringify(f.before) })),
              el("td", {}, el("code", { text: JSON.stringify(f.after) }))));
          });
        });
        list.appendChild(tbody);
        out.appendChild(list);
      }
    });
  });

  render();
  Object.keys(releases).forEach(follow);
}

// -- import page ---------------------------------------------------------------------------

function importPage(root) {
  const form = document.getElementById("import-form");
  const error = document.getElementById("import-error");
  const preview = document.getElementById("import-preview");
  const tables = document.getElementById("import-tables");
  const confirm = document.getElementById("import-confirm");
  const done = document.getElementById("import-done");
  let token = "";

  function payload(withToken) {
    const data = new FormData();
    data.append("file", form.file.files[0]);
    data.append("format", form.format.value);
    if (withToken) data.append("token", token);
    return data;
  }

  function showProblems(problems) {
    const list = el("ul", { className: "form-error" });
    (problems || []).forEach(function (p) { list.appendChild(prose("li", p.text)); });
    return list;
  }

  function section(title, head, items, cells, className) {
    if (!items.length) return;
    tables.appendChild(el("h3", { text: title + " (" + items.length + ")" }));
    const thead = el("tr");
    head.forEach(function (h) { thead.appendChild(el("th", { text: h })); });
    const tbody = el("tbody");
    items.forEach(function (item) {
      const tr = el("tr", { className: className || "" });
      cells(item).forEach(function (c) {
        // a cell may be a node already (a problem's words, with `names` as code)
        tr.appendChild(c instanceof Node ? el("td", {}, c) : el("td", { text: c === null || c === undefined ? "" : String(c) }));
      });
      tbody.appendChild(tr);
    });
    tables.appendChild(el("table", { className: "grid preview-table" }, el("thead", {}, thead), tbody));
  }

  function shown(value) {
    if (value === null || value === undefined || value === "") return "(none)";
    return typeof value === "string" ? value : JSON.stringify(value);
  }

  // One row per change of an item to update: the field, its old and its new value.
  function changeRows(items) {
    const rows = [];
    items.forEach(function (i) {
      (i.changes || []).forEach(function (c) { rows.push([i.id, c.field, shown(c.old), shown(c.new)]); });
      (i.anchors_changed || []).forEach(function (c) {
        rows.push([i.id, c.field + " of anchor " + JSON.stringify(c.quote), shown(c.old), shown(c.new)]);
      });
      i.anchors_added.forEach(function (a) {
        rows.push([i.id, "anchor added on " + a.source_id, "", a.quote]);
      });
      if (i.pending_spans_added) rows.push([i.id, "labels waiting for their file", "", String(i.pending_spans_added)]);
      if (i.state) rows.push([i.id, "state (reviewed" + (i.state.reviewed_by ? " by " + i.state.reviewed_by : "") + ")", i.state.old, i.state.new]);
    });
    return rows;
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    error.textContent = "";
    done.hidden = true;
    if (!form.file.files.length) { error.textContent = "choose a file to import"; return; }
    send("POST", root.dataset.preview, payload(false)).then(function (res) {
      if (!res.ok) { error.textContent = res.body.detail || "the file could not be previewed"; return; }
      const p = res.body;
      token = p.token;
      const c = p.counts;
      document.getElementById("import-summary").textContent =
        p.filename + " read as " + p.format +
        (p.format_guessed
          ? " (guessed from its name and first line; choose the format if that is wrong)"
          : "") +
        ": " + c.create + " to create, " + c.update +
        " to update, " + c.unchanged + " unchanged, " + c.refused + " refused, " + c.pending +
        " waiting for a file, " + c.warnings + " warning(s). This format changes only: " +
        (p.carries || []).join(", ") + ".";
      tables.textContent = "";
      section("Refused", ["Where", "Problem"], p.refused, function (r) {
        return [(r.line ? "line " + r.line : "") + (r.item ? " item " + r.item : ""), prose("span", r.text)];
      }, "refused");
      section("To create", ["Item", "Question", "Anchors", "State"], p.create, function (i) {
        const state = i.state ? i.state.new + " (reviewed" + (i.state.reviewed_by ? " by " + i.state.reviewed_by : "") + ")" : "draft";
        return [i.id, i.question, i.anchors_added.length + i.pending_spans_added, state];
      });
      section("Changes to update", ["Item", "What", "Was", "Becomes"], changeRows(p.update), function (r) {
        return r;
      });
      section("Files matched", ["In the file", "Document", "How"], p.matched_files || [], function (m) {
        return [m.file, m.source_id, m.how];
      });
      section("Waiting for a file", ["Item", "File", "Line", "Why"], p.pending, function (w) {
        return [w.item, w.file_name, w.line, w.reason];
      });
      section("Warnings", ["Where", "Note"], p.warnings, function (r) {
        return [(r.line ? "line " + r.line : "") + (r.item ? " item " + r.item : ""), prose("span", r.text)];
      });
      if (p.unchanged.length) tables.appendChild(el("p", { className: "muted", text: "Unchanged: " + p.unchanged.join(", ") }));
      confirm.disabled = !p.can_commit;
      confirm.textContent = p.can_commit ? "Import " + (c.create + c.update) + " item(s)" : "Fix the refused rows first";
      preview.hidden = false;
    });
  });

  document.getElementById("import-cancel").addEventListener("click", function () {
    preview.hidden = true;
  });

  confirm.addEventListener("click", function () {
    confirm.disabled = true;
    send("POST", root.dataset.commit, payload(true)).then(function (res) {
      confirm.disabled = false;
      if (!res.ok) {
        error.textContent = res.body.detail || "the import failed";
        if (res.body.problems) error.appendChild(showProblems(res.body.problems));
        preview.hidden = true;
        return;
      }
      const c = res.body.counts;
      preview.hidden = true;
      done.hidden = false;
      done.textContent = "Imported into " + res.body.evalset + ": " + c.create + " created, " +
        c.update + " updated, " + c.unchanged + " unchanged" +
        (c.pending ? "; " + c.pending + " label(s) wait for their file." : ".");
    });
  });
}

const releasesRoot = document.getElementById("releases-page");
if (releasesRoot) releasesPage(releasesRoot);
const importRoot = document.getElementById("import-page");
if (importRoot) importPage(importRoot);
