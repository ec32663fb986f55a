/*
 * The calendar (apps/stories/admin_calendar.py): a card dragged onto another day (or hour, in the
 * week view), or a tray draft dragged onto a day, is moved by a POST to the move endpoint; the
 * server keeps the card's time of day in the viewer's zone and answers where it now stands, and the
 * card goes there. With the keyboard: focus a card, arrow keys choose a day (Up and Down: an hour in
 * the week view, a week in the month view), Enter moves it there, Escape cancels. A "Move to" form's
 * date lists what that day already has. Without this script each card's form does the move.
 * A static file: the admin's CSP runs no inline script.
 */
"use strict";
(function () {
  var root = document.querySelector(".cal");
  if (!root) {
    return;
  }
  var status = root.querySelector(".cal-status");
  var isWeek = root.dataset.view === "week";
  var token = (root.querySelector("input[name=csrfmiddlewaretoken]") || {}).value || "";
  var pending = null; // {card, date, hour, cell} chosen with the keyboard

  function say(text, refused) {
    status.textContent = text;
    status.classList.toggle("cal-refused", Boolean(refused));
  }

  function cellFor(date, hour) {
    var selector = isWeek && hour !== null ? '.cal-slot[data-date="' + date + '"][data-hour="' + hour + '"]' : '.cal-day[data-date="' + date + '"]';
    return root.querySelector(selector);
  }

  function listOf(cell) {
    return cell.querySelector(".cal-items") || cell;
  }

  function place(card, answer) {
    card.dataset.date = answer.date;
    card.dataset.time = answer.time;
    card.className = card.className.replace(/\bcal-(planned|scheduled|published|undated)\b/, "cal-" + answer.timing);
    var head = card.querySelector(".cal-card-head");
    head.innerHTML = "";
    var time = document.createElement("time");
    time.className = "cal-time";
    time.dateTime = answer.to;
    time.textContent = answer.time;
    var label = document.createElement("span");
    label.className = "cal-timing";
    label.textContent = answer.timing_label;
    head.append(time, " ", label);
    var input = card.querySelector("input[name=to]");
    if (input) {
      input.value = answer.to;
    }
    var cell = cellFor(answer.date, isWeek ? String(parseInt(answer.time, 10)) : null);
    if (!cell) {
      card.remove(); // moved out of the days shown
      return;
    }
    var list = listOf(cell);
    var later = Array.prototype.find.call(list.children, function (other) {
      return other !== card && other.dataset.time > answer.time;
    });
    list.insertBefore(card, later || null);
    cell.closest(".cal-day").classList.remove("cal-free");
    if (cell.classList.contains("cal-slot")) {
      cell.classList.remove("cal-slot-free");
    }
  }

  function move(card, fields) {
    var body = new URLSearchParams(fields);
    body.set("item", card.dataset.item);
    card.classList.add("cal-moving");
    say("Moving…");
    return fetch(root.dataset.moveUrl, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { "X-CSRFToken": token, Accept: "application/json" },
    })
      .then(function (response) {
        return response.json().then(function (answer) {
          if (!response.ok) {
            throw new Error(answer.error || "refused (" + response.status + ").");
          }
          return answer;
        });
      })
      .then(function (answer) {
        place(card, answer);
        say(answer.message);
        card.focus();
      })
      .catch(function (error) {
        say("Nothing was moved: " + error.message, true);
      })
      .then(function () {
        card.classList.remove("cal-moving");
      });
  }

  function fieldsFor(cell) {
    var fields = { date: cell.dataset.date };
    if (cell.dataset.hour !== undefined) {
      fields.hour = cell.dataset.hour;
    }
    return fields;
  }

  // --- drag and drop ---------------------------------------------------------------------------
  var dragged = null;
  root.addEventListener("dragstart", function (event) {
    var card = event.target.closest && event.target.closest(".cal-card[data-movable]");
    if (!card) {
      return;
    }
    dragged = card;
    event.dataTransfer.effectAllowed = "move";
    event.dataTransfer.setData("text/plain", card.dataset.item);
  });
  root.addEventListener("dragend", function () {
    dragged = null;
  });
  function dropCell(event) {
    return event.target.closest && event.target.closest(isWeek ? ".cal-slot" : ".cal-day");
  }
  root.addEventListener("dragover", function (event) {
    var cell = dropCell(event);
    if (dragged && cell) {
      event.preventDefault();
      event.dataTransfer.dropEffect = "move";
      cell.classList.add("cal-over");
    }
  });
  root.addEventListener("dragleave", function (event) {
    var cell = dropCell(event);
    if (cell && !cell.contains(event.relatedTarget)) {
      cell.classList.remove("cal-over");
    }
  });
  root.addEventListener("drop", function (event) {
    var cell = dropCell(event);
    if (!dragged || !cell) {
      return;
    }
    event.preventDefault();
    cell.classList.remove("cal-over");
    var card = dragged;
    dragged = null;
    move(card, fieldsFor(cell));
  });

  // --- the keyboard --------------------------------------------------------------------------------
  function shifted(date, days) {
    var day = new Date(date + "T12:00:00Z");
    day.setUTCDate(day.getUTCDate() + days);
    return day.toISOString().slice(0, 10);
  }

  function today() {
    var first = root.querySelector(".cal-today") || root.querySelector(".cal-day");
    return first.dataset.date;
  }

  function choose(card, date, hour) {
    if (pending && pending.cell) {
      pending.cell.classList.remove("cal-target");
    }
    var cell = cellFor(date, hour);
    pending = { card: card, date: date, hour: hour, cell: cell };
    if (cell) {
      cell.classList.add("cal-target");
    }
    var when = date + (hour !== null ? " " + ("0" + hour).slice(-2) + ":" + (card.dataset.time || "09:00").slice(3) : card.dataset.time ? " " + card.dataset.time : " 09:00");
    var has = cell ? Array.prototype.map.call(cell.querySelectorAll(".cal-card"), function (other) {
      return (other.dataset.time || "") + " " + other.querySelector(".cal-title").textContent.trim();
    }) : [];
    say("Move to " + when + " (" + root.dataset.zone + ")? Enter moves it, Escape cancels." + (has.length ? " That day has: " + has.join("; ") + "." : ""));
  }

  function cancel() {
    if (pending && pending.cell) {
      pending.cell.classList.remove("cal-target");
    }
    pending = null;
  }

  root.addEventListener("keydown", function (event) {
    var card = event.target.closest && event.target.closest(".cal-card[data-movable]");
    if (!card || event.target !== card) {
      return;
    }
    var current = pending && pending.card === card ? pending : { date: card.dataset.date || today(), hour: isWeek && card.dataset.time ? parseInt(card.dataset.time, 10) : isWeek ? 9 : null };
    var steps = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: isWeek ? [0, -1] : [-7, 0], ArrowDown: isWeek ? [0, 1] : [7, 0] };
    if (steps[event.key]) {
      event.preventDefault();
      var hour = current.hour === null ? null : current.hour + steps[event.key][1];
      var days = steps[event.key][0];
      if (hour !== null && (hour < 0 || hour > 23)) {
        days += hour < 0 ? -1 : 1;
        hour = (hour + 24) % 24;
      }
      choose(card, shifted(current.date, days), hour);
    } else if (event.key === "Enter" && pending && pending.card === card) {
      event.preventDefault();
      var fields = { date: pending.date };
      if (pending.hour !== null) {
        fields.hour = String(pending.hour);
      }
      cancel();
      move(card, fields);
    } else if (event.key === "Escape" && pending) {
      cancel();
      say("Not moved.");
    }
  });

  // --- the "Move to" forms: what the chosen day already has -----------------------------------------
  root.addEventListener("change", function (event) {
    if (event.target.name !== "to" || !event.target.value) {
      return;
    }
    var list = event.target.form.querySelector(".cal-day-list");
    if (!list) {
      list = document.createElement("div");
      list.className = "cal-day-list";
      list.setAttribute("aria-live", "polite");
      event.target.form.append(list);
    }
    var date = event.target.value.slice(0, 10);
    fetch(root.dataset.dayUrl + "?date=" + encodeURIComponent(date), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        return response.json();
      })
      .then(function (answer) {
        list.innerHTML = "";
        var intro = document.createElement("p");
        intro.textContent = answer.error || (answer.items.length ? date + " already has:" : date + " has nothing yet.");
        list.append(intro);
        var items = document.createElement("ul");
        (answer.items || []).forEach(function (item) {
          var line = document.createElement("li");
          line.textContent = item.time + " " + item.timing_label.toLowerCase() + ": " + item.title;
          items.append(line);
        });
        list.append(items);
      });
  });
})();
