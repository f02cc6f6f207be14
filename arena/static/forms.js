// <select data-autosubmit>: submit its form on change (the page works without it too).
"use strict";
document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
  select.addEventListener("change", function () { select.form.submit(); });
});
