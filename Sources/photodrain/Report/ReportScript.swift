/// The report's two inline scripts: one for pages of cards, one for the index of a paged report.
///
/// Both read the filter from the URL's fragment, `#label=faces&state=analyzed&q=2019/`, and write
/// it back as it changes, so any view is a link. A page also takes `photo=N` (the card with id
/// `photo-N`), which the index's links use to land on one photo. Each records on `<body>` what
/// the browser saw when the load event fired (`data-check="loaded"`, counts, `data-load-ms`), so
/// `Scripts/check-report` and `Scripts/bench-report` can read it from a dumped DOM.
enum ReportScript {
    /// What both scripts share, in the scope of their `label`, `state` and `text` controls and
    /// their `apply()`: `query()`, the filter in its fragment form; `remember()`, which writes it
    /// to the URL as the controls change; and `readFragment(other)`, which sets the controls from
    /// the URL at load and hands any other `key=value` pair to `other`.
    static let filterFragment = """
          function query() {
            var parts = [];
            if (label.value !== "") { parts.push("label=" + encodeURIComponent(label.value)); }
            if (state.value !== "") { parts.push("state=" + encodeURIComponent(state.value)); }
            if (text.value !== "") { parts.push("q=" + encodeURIComponent(text.value)); }
            return parts.join("&");
          }
          function remember() {
            var q = query();
            history.replaceState(null, "", q ? "#" + q : location.pathname + location.search);
            apply();
          }
          function readFragment(other) {
            location.hash.replace(/^#/, "").split("&").forEach(function (pair) {
              var at = pair.indexOf("=");
              if (at < 0) { return; }
              var key = pair.slice(0, at), value;
              try { value = decodeURIComponent(pair.slice(at + 1)); } catch (e) { return; }
              var select = key === "label" ? label : key === "state" ? state : null;
              if (select && Array.prototype.some.call(select.options, function (o) { return o.value === value; })) {
                select.value = value;
              } else if (key === "q") {
                text.value = value;
              } else if (other) {
                other(key, value);
              }
            });
          }
          label.addEventListener("change", remember);
          state.addEventListener("change", remember);
          text.addEventListener("input", remember);
        """

    /// A function expression counting the images of a list the browser has decoded: what the
    /// load handlers record, so a check sees that every embedded JPEG is a picture.
    static let decodedCount = """
        (function (images) {
              var decoded = 0;
              for (var i = 0; i < images.length; i += 1) {
                if (images[i].complete && images[i].naturalWidth > 0) { decoded += 1; }
              }
              return decoded;
            })
        """

    /// The filter of a page of cards (label, state, path search), the links that carry it to the
    /// index and the neighbouring pages, and the landing on `photo=N`.
    static let cards: String = """
        (function () {
          var cards = Array.prototype.slice.call(document.querySelectorAll("article.card"));
          var label = document.getElementById("filter-label");
          var state = document.getElementById("filter-state");
          var text = document.getElementById("filter-text");
          var shown = document.getElementById("shown");
          var links = Array.prototype.slice.call(document.querySelectorAll("a[data-href]"));
          var target = null;
          function apply() {
            var needle = text.value.trim().toLowerCase();
            var count = 0;
            cards.forEach(function (card) {
              var visible = (label.value === "" || card.dataset.label === label.value) &&
                            (state.value === "" || card.dataset.state === state.value) &&
                            (needle === "" || card.dataset.path.toLowerCase().indexOf(needle) >= 0);
              card.hidden = !visible;
              if (visible) { count += 1; }
            });
            shown.textContent = String(count);
            document.body.dataset.shown = String(count);
            var q = query();
            links.forEach(function (link) { link.setAttribute("href", link.dataset.href + (q ? "#" + q : "")); });
          }
          \(filterFragment)
          // A link can open the page filtered, and aimed at one card: page-0003.html#label=faces&photo=612
          readFragment(function (key, value) {
            if (key === "photo") { target = document.getElementById("photo-" + value); }
          });
          apply();
          if (target) {
            target.classList.add("target");
            target.scrollIntoView({ block: "center" });
          }
          window.addEventListener("load", function () {
            var thumbs = document.querySelectorAll("img.thumb");
            var decoded = \(decodedCount)(thumbs);
            var body = document.body;
            body.dataset.cards = String(cards.length);
            body.dataset.boxes = String(document.querySelectorAll("main .box").length);
            body.dataset.confirmedBoxes = String(document.querySelectorAll("main .box.confirmed").length);
            body.dataset.thumbnails = String(thumbs.length);
            body.dataset.thumbnailsLoaded = String(decoded);
            if (target) { body.dataset.target = target.id + (target.hidden ? " hidden" : " shown"); }
            body.dataset.loadMs = String(Math.round(performance.now()));
            body.dataset.check = "loaded";
          });
        })();

        """

    /// The index's filter: applies label, state and path search to the manifest of every photo,
    /// counts the matches on each page, lists the first `listLimit` matches as links to their
    /// cards, and carries the filter on the links to the pages.
    static let index: String = """
        (function () {
          var manifest = JSON.parse(document.getElementById("manifest").textContent);
          var photos = manifest.photos;
          var label = document.getElementById("filter-label");
          var state = document.getElementById("filter-state");
          var text = document.getElementById("filter-text");
          var shown = document.getElementById("shown");
          var pagesShown = document.getElementById("pages-shown");
          var section = document.getElementById("matches-section");
          var list = document.getElementById("matches");
          var more = document.getElementById("more");
          var rows = Array.prototype.slice.call(document.querySelectorAll("#pages tbody tr"));
          function tag(kind, words) {
            var span = document.createElement("span");
            span.className = "tag " + kind;
            span.textContent = words;
            return span;
          }
          function apply() {
            var needle = text.value.trim().toLowerCase();
            var filtering = label.value !== "" || state.value !== "" || needle !== "";
            var q = query();
            var perPage = rows.map(function () { return 0; });
            var count = 0, first = "";
            var items = document.createDocumentFragment();
            for (var i = 0; i < photos.length; i += 1) {
              var photo = photos[i];
              if (label.value !== "" && manifest.labels[photo[1]] !== label.value) { continue; }
              if (state.value !== "" && manifest.states[photo[2]] !== state.value) { continue; }
              if (needle !== "" && photo[0].toLowerCase().indexOf(needle) < 0) { continue; }
              count += 1;
              perPage[photo[3] - 1] += 1;
              if (!filtering || count > manifest.listLimit) { continue; }
              var href = manifest.pages[photo[3] - 1] + "#" + (q ? q + "&" : "") + "photo=" + (i + 1);
              if (count === 1) { first = href; }
              var item = document.createElement("li");
              var link = document.createElement("a");
              link.setAttribute("href", href);
              link.textContent = photo[0];
              item.appendChild(link);
              item.appendChild(document.createTextNode(" "));
              item.appendChild(tag(manifest.labels[photo[1]], manifest.labelTitles[photo[1]]));
              item.appendChild(document.createTextNode(" "));
              item.appendChild(tag(manifest.states[photo[2]], manifest.stateTitles[photo[2]]));
              item.appendChild(document.createTextNode(" page " + photo[3]));
              items.appendChild(item);
            }
            list.textContent = "";
            list.appendChild(items);
            section.hidden = !filtering;
            more.textContent = count > manifest.listLimit ?
              "and " + (count - manifest.listLimit) + " more: narrow the filter, or open the pages below, which keep it." :
              (count === 0 ? "No photo matches." : "");
            var pagesWithMatches = 0;
            rows.forEach(function (row, index) {
              if (perPage[index] > 0) { pagesWithMatches += 1; }
              row.querySelector(".matches").textContent = String(perPage[index]);
              row.classList.toggle("none", filtering && perPage[index] === 0);
              var link = row.querySelector("a[data-href]");
              link.setAttribute("href", link.dataset.href + (q ? "#" + q : ""));
            });
            shown.textContent = String(count);
            pagesShown.textContent = String(pagesWithMatches);
            var body = document.body;
            body.dataset.shown = String(count);
            body.dataset.pagesWithMatches = String(pagesWithMatches);
            body.dataset.firstMatch = first;
          }
          \(filterFragment)
          readFragment(null);
          apply();
          window.addEventListener("load", function () {
            var body = document.body;
            body.dataset.photos = String(photos.length);
            body.dataset.pages = String(rows.length);
            body.dataset.cards = "0";
            body.dataset.boxes = "0";
            body.dataset.thumbnails = "0";
            body.dataset.thumbnailsLoaded = "0";
            body.dataset.loadMs = String(Math.round(performance.now()));
            body.dataset.check = "loaded";
          });
        })();

        """

    /// The people page's load handler: it records on `<body>` the people, the crops and how many
    /// of them decoded, for `Scripts/check-report`.
    static let people: String = """
        (function () {
          window.addEventListener("load", function () {
            var crops = document.querySelectorAll("img.crop");
            var decoded = \(decodedCount)(crops);
            var body = document.body;
            body.dataset.people = String(document.querySelectorAll("section.person").length);
            body.dataset.shown = body.dataset.people;
            body.dataset.crops = String(crops.length);
            body.dataset.cropsLoaded = String(decoded);
            body.dataset.cards = "0";
            body.dataset.boxes = "0";
            body.dataset.thumbnails = String(crops.length);
            body.dataset.thumbnailsLoaded = String(decoded);
            body.dataset.loadMs = String(Math.round(performance.now()));
            body.dataset.check = "loaded";
          });
        })();

        """
}
