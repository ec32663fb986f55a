/*
 * A story's page: the sections of its chosen channels become tabs (the channels' checkboxes decide
 * which), each override shows the story's text as its placeholder as one types it, and each
 * channel's preview follows the text: the server renders it as the destination shows it (the same
 * code as the post's page), this script only sends the form and puts the answer in place. Without
 * it, the sections stand one under another and the previews are those of the page as loaded. A
 * static file, because the admin's Content-Security-Policy runs no inline script.
 */
"use strict";
(function () {
  var DELAY_MS = 300;

  function start() {
    var box = document.getElementById("story-channels");
    var form = box && box.closest("form");
    if (!form) {
      return;
    }
    var sections = Array.prototype.slice.call(box.querySelectorAll(".story-channel"));
    var tabs = document.createElement("div");
    tabs.className = "story-tabs";
    tabs.setAttribute("role", "tablist");
    tabs.setAttribute("aria-label", "Channels");
    var none = document.createElement("p");
    none.className = "story-no-channel";
    none.textContent = "Choose a channel above: its fields and preview are shown here.";
    box.insertBefore(tabs, sections.length ? sections[0] : null);
    box.insertBefore(none, tabs.nextSibling);
    var current = null;

    function checkbox(section) {
      return form.querySelector('input[name="channels"][value="' + section.getAttribute("data-channel") + '"]');
    }

    function chosen() {
      return sections.filter(function (section) {
        var input = checkbox(section);
        return input && input.checked;
      });
    }

    function select(section, focus) {
      current = section;
      sections.forEach(function (other) {
        var shown = other === section;
        other.hidden = !shown;
        other.tab.setAttribute("aria-selected", shown ? "true" : "false");
        other.tab.tabIndex = shown ? 0 : -1;
      });
      if (focus) {
        section.tab.focus();
      }
    }

    function arrange() {
      var open = chosen();
      sections.forEach(function (section) {
        section.tab.hidden = open.indexOf(section) < 0;
      });
      none.hidden = open.length > 0;
      if (!open.length) {
        sections.forEach(function (section) {
          section.hidden = true;
        });
        current = null;
        return;
      }
      select(open.indexOf(current) >= 0 ? current : open[0], false);
    }

    sections.forEach(function (section) {
      var tab = document.createElement("button");
      tab.type = "button";
      tab.className = "story-tab";
      tab.id = section.id + "-tab";
      tab.setAttribute("role", "tab");
      tab.setAttribute("aria-controls", section.id);
      tab.textContent = section.querySelector(".story-channel-title").textContent;
      tab.addEventListener("click", function () {
        select(section, false);
      });
      tab.addEventListener("keydown", function (event) {
        var open = chosen();
        var at = open.indexOf(section);
        var step = event.key === "ArrowRight" ? 1 : event.key === "ArrowLeft" ? -1 : 0;
        if (step && open.length) {
          event.preventDefault();
          select(open[(at + step + open.length) % open.length], true);
        }
      });
      section.tab = tab;
      section.setAttribute("role", "tabpanel");
      section.setAttribute("aria-labelledby", tab.id);
      tabs.appendChild(tab);
      var input = checkbox(section);
      if (input) {
        input.addEventListener("change", function () {
          if (input.checked) {
            current = section;
          }
          arrange();
          refresh(section);
        });
      }
    });
    box.classList.add("story-channels-tabbed");
    arrange();

    // --- Placeholders and previews ---

    function shared(name) {
      var field = form.querySelector('[name="' + name + '"]');
      return field ? field.value : "";
    }

    function fallbacks() {
      var fields = box.querySelectorAll("[data-falls-back-to]");
      for (var i = 0; i < fields.length; i++) {
        fields[i].placeholder = shared(fields[i].getAttribute("data-falls-back-to"));
      }
    }

    var url = box.getAttribute("data-preview-url");
    var sent = {}; // by channel: answers that come back out of order are dropped

    function refresh(section) {
      var channel = section.getAttribute("data-channel");
      var number = (sent[channel] || 0) + 1;
      sent[channel] = number;
      var data = new FormData(form);
      data.append("preview_channel", channel);
      if (box.getAttribute("data-story")) {
        data.append("story", box.getAttribute("data-story"));
      }
      var target = section.querySelector(".story-preview");
      fetch(url, { method: "POST", body: data, credentials: "same-origin" })
        .then(function (response) {
          if (!response.ok) {
            throw new Error("The preview could not be made (" + response.status + ").");
          }
          return response.text();
        })
        .then(function (html) {
          if (number === sent[channel]) {
            target.innerHTML = html; // HTML the server escaped
          }
        })
        .catch(function (error) {
          if (number === sent[channel]) {
            target.textContent = error.message;
          }
        });
    }

    var timers = {};
    function later(section) {
      var channel = section.getAttribute("data-channel");
      clearTimeout(timers[channel]);
      timers[channel] = setTimeout(function () {
        refresh(section);
      }, DELAY_MS);
    }

    form.addEventListener("input", function (event) {
      var section = event.target.closest(".story-channel");
      if (section) {
        later(section);
        return;
      }
      fallbacks();
      chosen().forEach(later);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
