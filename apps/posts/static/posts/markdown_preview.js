/*
 * The post form's live Markdown preview: a pane under the body that shows the body as its blog
 * page renders it. The server renders and sanitizes (apps.core.markdown, the same code as the
 * public pages); this script only sends the body and puts the answer in the pane's frame, a page of
 * its own with the blog's stylesheet and image rules (the blog app's preview_frame). Without it, the
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
    var status = document.createElement("p");
    status.className = "markdown-preview-status";
    status.setAttribute("aria-live", "polite");
    var frame = document.createElement("iframe");
    frame.className = "markdown-preview-frame";
    frame.title = "Preview of the body";
    var loaded = new Promise(function (resolve) {
      frame.addEventListener("load", resolve, { once: true });
    });
    frame.src = textarea.getAttribute("data-markdown-preview-frame");
    pane.appendChild(heading);
    pane.appendChild(status);
    pane.appendChild(frame);
    (textarea.closest(".form-row") || textarea.parentNode).appendChild(pane);

    var timer = null;
    var sent = 0; // answers that come back out of order are dropped: only the latest one counts

    function fit() {
      var page = frame.contentDocument && frame.contentDocument.documentElement;
      if (page) {
        frame.style.height = page.scrollHeight + "px"; // the pane's CSS caps it; the frame scrolls
      }
    }

    function fail(message) {
      pane.classList.add("markdown-preview-failed");
      status.textContent = message;
    }

    function show(html) {
      return loaded.then(function () {
        var target = frame.contentDocument && frame.contentDocument.getElementById("preview");
        if (!target) {
          fail("No preview: its frame did not load.");
          return;
        }
        pane.classList.remove("markdown-preview-failed");
        status.textContent = "";
        target.innerHTML = html; // HTML the server has sanitized, in a page under the blog's policy
        var images = target.querySelectorAll("img");
        for (var i = 0; i < images.length; i++) {
          images[i].addEventListener("load", fit);
        }
        fit();
      });
    }

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
          if (answer.ok) {
            return show(answer.text);
          }
          fail("No preview (" + answer.status + ").");
        })
        .catch(function () {
          if (number === sent) {
            fail("No preview: the server could not be reached.");
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
