// The heads overview: every head's attention pattern in one <img>, one <button> per head on top.
//
// Streamlit (st.components.v2) calls this on mount and again whenever `data` changes, with the
// same parentElement each time, so the DOM is built once per grid shape and later calls only
// move the outline or swap the image source. A click sends the trigger "select" = [layer, head].
// Nothing here comes from user text: labels are numbers, the image is our own PNG, and every
// word comes from data.labels (the app's, in the session's language): this file writes none.
//
// data: {png, rows, cols, cell, gap, n_pos, display_px, highlight, rev, selected: [layer, head],
//        labels: {x, y, alt, cell}}  (cell: a name with {layer} and {head} to fill in)
// The root's attributes tell tests and benchmarks what is on screen:
//   data-state "loading" | "ready" | "error", data-rev (digest of the PNG shown),
//   data-selected "layer,head", data-geometry "rows x cols x cell x gap".

const pct = (v, of) => `${(100 * v) / of}%`;

function build(root, { rows, cols, cell, gap }) {
  const pitch = cell + gap;
  const w = cols * pitch - gap;
  const h = rows * pitch - gap;
  const plot = root.querySelector(".tf-hg-plot");
  const cells = plot.querySelector(".tf-hg-cells");
  const colLabels = plot.querySelector(".tf-hg-cols");
  const rowLabels = plot.querySelector(".tf-hg-rows");
  cells.replaceChildren();
  colLabels.replaceChildren();
  rowLabels.replaceChildren();
  for (let c = 0; c < cols; c++) {
    const s = document.createElement("span");
    s.textContent = String(c);
    s.style.left = pct(c * pitch + cell / 2, w);
    colLabels.appendChild(s);
  }
  for (let r = 0; r < rows; r++) {
    const s = document.createElement("span");
    s.textContent = String(r);
    s.style.top = pct(r * pitch + cell / 2, h);
    rowLabels.appendChild(s);
    for (let c = 0; c < cols; c++) {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.layer = String(r);
      b.dataset.head = String(c);
      b.style.left = pct(c * pitch, w);
      b.style.top = pct(r * pitch, h);
      b.style.width = pct(cell, w);
      b.style.height = pct(cell, h);
      cells.appendChild(b);
    }
  }
  root.dataset.geometry = `${rows}x${cols}x${cell}x${gap}`;
  delete root.dataset.words; // new buttons: name them again
}

// The grid's words (axis titles, image description, each cell's name), set again only when
// they change (a switch of language).
function name(root, labels) {
  const words = JSON.stringify(labels || {});
  if (root.dataset.words === words) return;
  const { x = "", y = "", alt = "", cell = "" } = labels || {};
  const plot = root.querySelector(".tf-hg-plot");
  plot.querySelector(".tf-hg-xtitle").textContent = x;
  plot.querySelector(".tf-hg-ytitle").textContent = y;
  plot.querySelector("img").alt = alt;
  for (const b of plot.querySelectorAll(".tf-hg-cells button")) {
    const text = cell.replaceAll("{layer}", b.dataset.layer).replaceAll("{head}", b.dataset.head);
    b.title = text;
    b.setAttribute("aria-label", text);
  }
  root.dataset.words = words;
}

function skeleton(parentElement) {
  const root = document.createElement("div");
  root.className = "tf-hg";
  root.dataset.testid = "tfHeadGrid";
  root.dataset.state = "empty";
  const plot = document.createElement("div");
  plot.className = "tf-hg-plot";
  const img = document.createElement("img");
  img.draggable = false;
  for (const cls of ["tf-hg-xtitle", "tf-hg-ytitle"]) {
    const t = document.createElement("span");
    t.className = cls;
    plot.appendChild(t);
  }
  for (const cls of ["tf-hg-cols", "tf-hg-rows", "tf-hg-cells"]) {
    const d = document.createElement("div");
    d.className = cls;
    plot.appendChild(d);
  }
  plot.prepend(img);
  root.appendChild(plot);
  parentElement.appendChild(root);
  // One listener for every button, present and future; it calls the latest trigger setter.
  plot.querySelector(".tf-hg-cells").addEventListener("click", (e) => {
    const b = e.target.closest("button");
    if (b && root.tfSelect) root.tfSelect("select", [Number(b.dataset.layer), Number(b.dataset.head)]);
  });
  return root;
}

export default function headGrid({ data, parentElement, setTriggerValue }) {
  if (!data) return;
  const root = parentElement.querySelector(".tf-hg") || skeleton(parentElement);
  root.tfSelect = setTriggerValue;
  const { rows, cols, cell, gap, display_px: displayPx, selected } = data;
  const pitch = cell + gap;
  const plot = root.querySelector(".tf-hg-plot");
  plot.style.maxWidth = `${((cols * pitch - gap) * displayPx) / cell}px`;
  plot.style.aspectRatio = `${cols * pitch - gap} / ${rows * pitch - gap}`;
  plot.style.setProperty("--tf-hg-highlight", data.highlight);
  if (root.dataset.geometry !== `${rows}x${cols}x${cell}x${gap}`) build(root, data);
  name(root, data.labels);

  const [sl, sh] = selected || [-1, -1];
  for (const b of plot.querySelectorAll(".tf-hg-cells button")) {
    const on = Number(b.dataset.layer) === sl && Number(b.dataset.head) === sh;
    b.classList.toggle("tf-hg-selected", on);
    b.setAttribute("aria-pressed", on ? "true" : "false");
  }
  root.dataset.selected = `${sl},${sh}`;

  if (root.dataset.rev !== data.rev) {
    const img = plot.querySelector("img");
    const rev = data.rev;
    root.dataset.state = "loading";
    root.dataset.rev = rev;
    img.onload = () => { if (root.dataset.rev === rev) root.dataset.state = "ready"; };
    img.onerror = () => { if (root.dataset.rev === rev) root.dataset.state = "error"; };
    img.src = `data:image/png;base64,${data.png}`;
  }
}
