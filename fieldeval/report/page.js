// Paging, the field and kind filters, and sortable tables. The page reads fine without it.
(function () {
  "use strict";
  function sortable(table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (head, column) {
      head.title = "sort";
      head.addEventListener("click", function () {
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var down = head.dataset.order !== "down";
        head.dataset.order = down ? "down" : "up";
        rows.sort(function (a, b) {
          var x = a.cells[column].textContent, y = b.cells[column].textContent;
          var nx = parseFloat(x), ny = parseFloat(y);
          var order = !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
          return down ? -order : order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), sortable);

  var data = document.getElementById("document-data");
  if (!data) { return; }
  var payload = JSON.parse(data.textContent);
  var documents = payload.documents, size = payload.page_size;
  var state = { field: "", kind: "", page: 0 };
  var holder = document.getElementById("documents");
  var label = document.getElementById("page-label");

  function cell(row, text, name) {
    var td = row.insertCell();
    td.textContent = text;
    if (name) { td.className = name; }
    return td;
  }
  function render(doc, leaves) {
    var section = document.createElement("section");
    section.className = "doc";
    var title = document.createElement("h3");
    title.textContent = doc[0] + " ";
    var score = document.createElement("span");
    score.textContent = "score " + doc[1].toFixed(3) + " ";
    var verdict = document.createElement("span");
    verdict.className = doc[2] ? "pass" : "fail";
    verdict.textContent = doc[2] ? "pass" : "FAIL";
    title.appendChild(score);
    title.appendChild(verdict);
    section.appendChild(title);
    var table = document.createElement("table");
    table.className = "leaves";
    var head = table.createTHead().insertRow();
    payload.columns.forEach(function (name) {
      var th = document.createElement("th");
      th.textContent = name;
      head.appendChild(th);
    });
    var body = table.createTBody();
    leaves.forEach(function (leaf) {
      var row = body.insertRow();
      row.className = "k-" + leaf[2].replace(/ /g, "-") + (leaf[7] ? " culprit" : "");
      cell(row, leaf[0], "path"); cell(row, leaf[2]); cell(row, leaf[3], "expected"); cell(row, leaf[4], "got");
      cell(row, leaf[5]); cell(row, leaf[6], "num"); cell(row, leaf[7], "num"); cell(row, leaf[8], "num");
    });
    section.appendChild(table);
    return section;
  }
  function show() {
    var kept = [];
    documents.forEach(function (doc) {
      var leaves = doc[3].filter(function (leaf) {
        return (!state.field || leaf[1] === state.field) && (!state.kind || leaf[2] === state.kind);
      });
      if (leaves.length) { kept.push([doc, leaves]); }
    });
    var pages = Math.max(1, Math.ceil(kept.length / size));
    state.page = Math.min(state.page, pages - 1);
    holder.textContent = "";
    kept.slice(state.page * size, (state.page + 1) * size).forEach(function (pair) {
      holder.appendChild(render(pair[0], pair[1]));
    });
    label.textContent = "page " + (state.page + 1) + " of " + pages + " (" + kept.length + " document(s))";
    document.getElementById("prev").disabled = state.page === 0;
    document.getElementById("next").disabled = state.page >= pages - 1;
  }
  function choose(id, key) {
    document.getElementById(id).addEventListener("change", function (event) {
      state[key] = event.target.value;
      state.page = 0;
      show();
    });
  }
  choose("field-filter", "field");
  choose("kind-filter", "kind");
  document.getElementById("prev").addEventListener("click", function () { state.page -= 1; show(); });
  document.getElementById("next").addEventListener("click", function () { state.page += 1; show(); });
  document.getElementById("filters").hidden = false;
  document.getElementById("pager").hidden = false;
  label.textContent = "page 1 of " + Math.max(1, Math.ceil(documents.length / size)) + " (" + documents.length + " document(s))";
  document.getElementById("next").disabled = documents.length <= size;
  document.getElementById("prev").disabled = true;
}());
