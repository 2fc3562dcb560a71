// linkd dashboard: the little that needs a script. Pages work without it.
(function () {
  "use strict";
  document.addEventListener("click", function (e) {
    var b = e.target.closest ? e.target.closest("button.copy") : null;
    if (!b || !navigator.clipboard) return;
    navigator.clipboard.writeText(b.getAttribute("data-copy")).then(function () {
      var t = b.textContent;
      b.textContent = "Copied";
      setTimeout(function () { b.textContent = t; }, 1500);
    }, function () {});
  });

  // The link builder's live preview: the short URL and its QR code.
  var form = document.getElementById("builder");
  if (!form) return;
  var base = form.getAttribute("data-short-base") || "";
  var img = document.getElementById("qr-preview");
  var out = document.getElementById("preview-url");
  var code = form.elements["custom_code"], domain = form.elements["domain_id"];
  var color = form.elements["qr_code_options.color"], bg = form.elements["qr_code_options.background_color"];
  var timer = 0;
  function shortURL() {
    var b = base;
    if (domain && domain.value) {
      var opt = domain.options[domain.selectedIndex];
      b = location.protocol + "//" + opt.textContent.trim() + "/";
    }
    return b + (code.value.trim() || "…");
  }
  function update() {
    var u = shortURL();
    out.textContent = u;
    var q = "text=" + encodeURIComponent(u.replace("…", "")) +
      "&color=" + encodeURIComponent(color.value) + "&background_color=" + encodeURIComponent(bg.value);
    img.src = "/dashboard/qr-preview?" + q;
  }
  function later() { clearTimeout(timer); timer = setTimeout(update, 200); }
  [code, domain, color, bg].forEach(function (el) {
    if (el) { el.addEventListener("input", later); el.addEventListener("change", later); }
  });
  update();
})();
