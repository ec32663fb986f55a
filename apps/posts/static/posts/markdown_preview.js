/*
 * The post form's live Markdown preview: a pane under the body that shows the body as its blog
 * page renders it. The server renders and sanitizes (apps.core.markdown, the same code as the
 * public pages); this script only sends the body and puts the answer in the pane. Without it, the
 * form works as before. A static file, because the admin's Content-Security-Policy runs no inline script.
 */
"use strict";
(function () {
  var DELAY_MS = 400;

  function csrfToken(form) {
    var field = form && form.querySelector("input[name=csrfmiddlewaretoken]");
    if (field) {
      return field.value;
    }
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function attach(textarea) {
    var url = textarea.getAttribute("data-markdown-preview");
    var pane = document.createElement("div");
    pane.className = "markdown-preview";
    var heading = document.createElement("p");
    heading.className = "markdown-preview-heading";
    heading.textContent = "Preview";
    var content = document.createElement("div");
    content.className = "markdown-preview-content";
    content.setAttribute("aria-live", "polite");
    pane.appendChild(heading);
    pane.appendChild(content);
    (textarea.closest(".form-row") || textarea.parentNode).appendChild(pane);

    var timer = null;
    var sent = 0; // answers that come back out of order are dropped: only the latest one counts

    function refresh() {
      var number = ++sent;
      var body = new URLSearchParams();
      body.append("body", textarea.value);
      fetch(url, {
        method: "POST",
        body: body,
        credentials: "same-origin",
        headers: { "X-CSRFToken": csrfToken(textarea.form), "X-Requested-With": "XMLHttpRequest" },
      })
        .then(function (response) {
          return response.text().then(function (text) {
            return { ok: response.ok, status: response.status, text: text };
          });
        })
        .then(function (answer) {
          if (number !== sent) {
            return;
          }
          pane.classList.toggle("markdown-preview-failed", !answer.ok);
          if (answer.ok) {
            content.innerHTML = answer.text; // HTML the server has sanitized
          } else {
            content.textContent = "No preview (" + answer.status + ").";
          }
        })
        .catch(function () {
          if (number === sent) {
            pane.classList.add("markdown-preview-failed");
            content.textContent = "No preview: the server could not be reached.";
          }
        });
    }

    textarea.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(refresh, DELAY_MS);
    });
    if (textarea.value) {
      refresh();
    }
  }

  function start() {
    var areas = document.querySelectorAll("textarea[data-markdown-preview]");
    for (var i = 0; i < areas.length; i++) {
      attach(areas[i]);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
