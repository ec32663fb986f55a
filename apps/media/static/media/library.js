/*
 * The media library's page (apps/media/admin.py): the upload box takes dropped images (each sent
 * to the upload endpoint, then the page reloads to show them; a refusal is shown as the service's
 * message), and "Insert into post" hands the image's Markdown to the post form that opened the
 * library (apps/posts/static/posts/body_images.js), or copies it to the clipboard. Without this
 * script the box is a plain upload form. A static file: the admin's CSP runs no inline script.
 */
"use strict";
(function () {
  // The name the post form gives the library's window (body_images.js).
  var OPENED_FROM_POST = "media-library";

  function csrfToken(form) {
    var field = form.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function upload(form, file) {
    var body = new FormData();
    body.append("file", file, file.name);
    body.append("alt_text", form.querySelector("input[name=alt_text]").value);
    return fetch(form.action, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken(form), Accept: "application/json" },
    }).then(function (response) {
      return response.json().then(
        function (answer) {
          if (!response.ok) {
            throw new Error(file.name + ": " + (answer.error || "refused (" + response.status + ")."));
          }
          return answer;
        },
        function () {
          throw new Error(file.name + ": refused (" + response.status + ").");
        }
      );
    });
  }

  function dropZone(form) {
    var status = form.querySelector(".media-upload-status");
    function stop(event) {
      event.preventDefault();
      event.stopPropagation();
    }
    form.addEventListener("dragover", function (event) {
      stop(event);
      form.classList.add("media-upload-over");
    });
    form.addEventListener("dragleave", function () {
      form.classList.remove("media-upload-over");
    });
    form.addEventListener("drop", function (event) {
      stop(event);
      form.classList.remove("media-upload-over");
      var files = Array.prototype.slice.call((event.dataTransfer && event.dataTransfer.files) || []);
      if (!files.length) {
        return;
      }
      status.classList.remove("media-upload-failed");
      status.textContent = "Uploading " + files.length + " file(s)…";
      var failures = [];
      var done = files.reduce(function (previous, file) {
        return previous.then(function () {
          return upload(form, file).catch(function (error) {
            failures.push(error.message);
          });
        });
      }, Promise.resolve());
      done.then(function () {
        if (!failures.length) {
          window.location.reload();
          return;
        }
        status.classList.add("media-upload-failed");
        status.textContent = "Not uploaded: " + failures.join(" ");
        if (failures.length < files.length) {
          status.textContent += " The others were uploaded: reload the page to see them.";
        }
      });
    });
  }

  function flash(button, label) {
    var original = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", original);
    button.textContent = label;
    window.setTimeout(function () {
      button.textContent = original;
    }, 2000);
  }

  function postForm() {
    try {
      return window.name === OPENED_FROM_POST && window.opener && !window.opener.closed ? window.opener : null;
    } catch (error) {
      return null;
    }
  }

  function insert(button) {
    var markdown = button.getAttribute("data-markdown");
    var opener = postForm();
    if (opener) {
      opener.postMessage({ mediumMarkdown: markdown }, window.location.origin);
      window.close();
      return;
    }
    // The clipboard exists on secure pages only (https, localhost) and may be refused: then the
    // Markdown is shown, selected, for the user to copy.
    var fallBack = function () {
      window.prompt("Copy the Markdown:", markdown);
    };
    if (!navigator.clipboard) {
      fallBack();
      return;
    }
    navigator.clipboard.writeText(markdown).then(function () {
      flash(button, "Copied");
    }, fallBack);
  }

  function start() {
    var zones = document.querySelectorAll("form[data-media-dropzone]");
    for (var i = 0; i < zones.length; i++) {
      dropZone(zones[i]);
    }
    if (postForm()) {
      var buttons = document.querySelectorAll(".medium-insert");
      for (var j = 0; j < buttons.length; j++) {
        buttons[j].textContent = "Insert into the post";
      }
    }
    document.addEventListener("click", function (event) {
      var button = event.target.closest(".medium-insert");
      if (button) {
        insert(button);
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
