/*
 * The post form's body takes images: one pasted or dropped on it is uploaded to the account's media
 * library (the library's upload endpoint, apps/media/admin.py: same origin, with the CSRF token)
 * and its Markdown, ![alt](src), is inserted at the cursor. "Media library" opens the library in a
 * window of its own, whose "Insert into post" (apps/media/static/media/library.js) sends the
 * Markdown back here for the same insertion. Without this script the body is a plain textarea.
 * A static file, because the admin's Content-Security-Policy runs no inline script.
 */
"use strict";
(function () {
  var LIBRARY_WINDOW = "media-library"; // the name library.js knows a post form's window by

  function csrfToken(form) {
    var field = form && form.querySelector("input[name=csrfmiddlewaretoken]");
    if (field) {
      return field.value;
    }
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function imagesOf(transfer) {
    var files = Array.prototype.slice.call((transfer && transfer.files) || []);
    return files.filter(function (file) {
      return /^image\//.test(file.type);
    });
  }

  function attach(textarea) {
    var uploadUrl = textarea.getAttribute("data-media-upload");
    var bar = document.createElement("p");
    bar.className = "body-images";
    var open = document.createElement("button");
    open.type = "button";
    open.className = "button";
    open.textContent = "Media library";
    var status = document.createElement("span");
    status.className = "body-images-status";
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    bar.appendChild(open);
    bar.appendChild(document.createTextNode(" Paste or drop an image on the body to upload it. "));
    bar.appendChild(status);
    textarea.parentNode.insertBefore(bar, textarea.nextSibling);
    var library = null;

    function insert(markdown) {
      var start = textarea.selectionStart;
      var end = textarea.selectionEnd;
      textarea.setRangeText(markdown, start, end, "end");
      textarea.focus();
      // The live preview (markdown_preview.js) and Django's "unsaved changes" see a typed change.
      textarea.dispatchEvent(new Event("input", { bubbles: true }));
    }

    function upload(file) {
      var body = new FormData();
      body.append("file", file, file.name || "pasted-image");
      return fetch(uploadUrl, {
        method: "POST",
        body: body,
        credentials: "same-origin",
        headers: { "X-CSRFToken": csrfToken(textarea.form), Accept: "application/json" },
      }).then(function (response) {
        return response.json().then(
          function (answer) {
            if (!response.ok) {
              throw new Error(answer.error || "refused (" + response.status + ").");
            }
            return answer;
          },
          function () {
            throw new Error("refused (" + response.status + ").");
          }
        );
      });
    }

    function uploadAll(files) {
      status.classList.remove("body-images-failed");
      return files.reduce(function (previous, file) {
        return previous.then(function () {
          status.textContent = "Uploading " + (file.name || "the image") + "…";
          return upload(file).then(
            function (medium) {
              insert(medium.markdown);
              status.textContent = "Uploaded " + medium.name + ".";
            },
            function (error) {
              status.classList.add("body-images-failed");
              status.textContent = (file.name || "The image") + " was not uploaded: " + error.message;
            }
          );
        });
      }, Promise.resolve());
    }

    textarea.addEventListener("paste", function (event) {
      var files = imagesOf(event.clipboardData);
      if (files.length) {
        event.preventDefault();
        uploadAll(files);
      }
    });
    textarea.addEventListener("dragover", function (event) {
      if (event.dataTransfer && Array.prototype.indexOf.call(event.dataTransfer.types, "Files") >= 0) {
        event.preventDefault();
      }
    });
    textarea.addEventListener("drop", function (event) {
      var files = imagesOf(event.dataTransfer);
      if (files.length) {
        event.preventDefault();
        uploadAll(files);
      }
    });
    open.addEventListener("click", function () {
      library = window.open(textarea.getAttribute("data-media-library"), LIBRARY_WINDOW, "width=1000,height=760");
    });
    window.addEventListener("message", function (event) {
      var data = event.data;
      if (event.origin !== window.location.origin || !library || event.source !== library) {
        return;
      }
      if (data && typeof data.mediumMarkdown === "string") {
        insert(data.mediumMarkdown);
      }
    });
  }

  function start() {
    var areas = document.querySelectorAll("textarea[data-media-upload]");
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
