// Copy buttons: <button data-copy="element-id">.
"use strict";
document.querySelectorAll("[data-copy]").forEach(function (button) {
  button.addEventListener("click", function () {
    var el = document.getElementById(button.getAttribute("data-copy"));
    if (!el || !navigator.clipboard) { return; }
    navigator.clipboard.writeText(el.textContent).then(function () {
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = "Copy"; }, 1500);
    });
  });
});
