// Polls the leadership endpoint of the node that serves this page and renders its view of the cluster. Transitions
// are found by comparing each answer with the previous one, so the timeline starts when the page is opened.
(function () {
  'use strict';

  var POLL_MILLIS = 1000;
  var MAX_EVENTS = 50;
  var previous = null;
  // The last leader seen per group: a hand-over often shows a poll with no leader in between, and the new leader's
  // line should still say whom it replaced.
  var lastLeaders = {};
  var events = [];

  function el(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) {
      node.textContent = String(text);
    }
    if (className) {
      node.className = className;
    }
    return node;
  }

  function badge(text) {
    var cell = el('td');
    cell.appendChild(el('span', text, 'badge ' + text));
    return cell;
  }

  function time(instant) {
    return instant ? new Date(instant).toLocaleTimeString() : '–';
  }

  function record(text) {
    events.unshift({ at: new Date(), text: text });
    events.length = Math.min(events.length, MAX_EVENTS);
  }

  function placement(assignment) {
    return assignment.daemon + ': ' + assignment.state + ' on ' + assignment.node
      + ' (generation ' + assignment.generation + ')';
  }

  function diffAssignments(view) {
    var known = {};
    previous.assignments.forEach(function (assignment) { known[assignment.daemon] = assignment; });
    view.assignments.forEach(function (now) {
      var before = known[now.daemon];
      delete known[now.daemon];
      if (!before) {
        record(placement(now));
        return;
      }
      // A move passes through REVOKING, DELETED and ASSIGNING; a poll may miss any of them, never the node change.
      if (before.node !== now.node) {
        record(now.daemon + ': ' + before.node + ' \u2192 ' + now.node + ' (generation ' + now.generation + ')');
        if (now.state !== 'ACTIVE') {
          record(placement(now));
        }
      }
      else if (before.state !== now.state || before.generation !== now.generation) {
        record(placement(now));
      }
    });
    Object.keys(known).forEach(function (daemon) { record(daemon + ': forgotten'); });
  }

  function diff(view) {
    if (previous === null) {
      Object.keys(view.groups).forEach(function (name) {
        var group = view.groups[name];
        record(name + ': ' + (group.leader ? 'led by ' + group.leader + ' (term ' + group.term + ')' : 'no leader'));
      });
      view.assignments.forEach(function (assignment) { record(placement(assignment)); });
      return;
    }
    Object.keys(view.groups).forEach(function (name) {
      var now = view.groups[name];
      var before = previous.groups[name];
      if (!before || before.leader !== now.leader || before.term !== now.term) {
        var was = lastLeaders[name];
        var same = was && was.leader === now.leader && was.term === now.term;
        record(name + ': ' + (now.leader ? 'leader ' + now.leader + ' (term ' + now.term + ')' : 'no leader')
          + (was && !same ? ', was ' + was.leader + ' (term ' + was.term + ')' : ''));
      }
    });
    var known = {};
    previous.members.forEach(function (member) { known[member.id] = member; });
    view.members.forEach(function (member) {
      var before = known[member.id];
      if (!before) {
        record('node ' + member.id + ' joined');
      }
      else if (before.state !== member.state) {
        record('node ' + member.id + ' is ' + member.state);
      }
      delete known[member.id];
    });
    Object.keys(known).forEach(function (id) { record('node ' + id + ' left'); });
    diffAssignments(view);
  }

  function render(view) {
    document.getElementById('node').textContent = view.node;
    var leads = {};
    var groups = document.querySelector('#groups tbody');
    groups.replaceChildren();
    Object.keys(view.groups).sort().forEach(function (name) {
      var group = view.groups[name];
      if (group.leader) {
        (leads[group.leader] = leads[group.leader] || []).push(name);
      }
      var row = el('tr');
      row.dataset.group = name;
      row.appendChild(el('td', name));
      row.appendChild(group.leader ? el('td', group.leader, 'leader') : badge('none'));
      row.appendChild(el('td', group.term, 'term'));
      row.appendChild(badge(group.role));
      row.appendChild(el('td', group.remainingMillis === null ? '–' : (group.remainingMillis / 1000).toFixed(1) + ' s'));
      groups.appendChild(row);
    });
    var assigned = {};
    view.assignments.forEach(function (assignment) {
      if (assignment.state !== 'DELETED') {
        (assigned[assignment.node] = assigned[assignment.node] || []).push(assignment.daemon);
      }
    });
    var nodes = document.querySelector('#nodes tbody');
    nodes.replaceChildren();
    view.members.forEach(function (member) {
      var row = el('tr');
      row.dataset.node = member.id;
      row.appendChild(el('td', member.id + (member.id === view.node ? ' (this node)' : '')));
      row.appendChild(el('td', member.name));
      row.appendChild(el('td', member.host + ' / ' + member.pid));
      row.appendChild(badge(member.state));
      row.appendChild(el('td', time(member.lastHeartbeat)));
      row.appendChild(el('td', (leads[member.id] || []).sort().join(', ')));
      row.appendChild(el('td', (assigned[member.id] || []).sort().join(', ')));
      nodes.appendChild(row);
    });
    var daemons = document.querySelector('#daemons tbody');
    daemons.replaceChildren();
    view.assignments.forEach(function (assignment) {
      var row = el('tr', null, assignment.state === 'ACTIVE' ? '' : 'unsettled');
      row.dataset.daemon = assignment.daemon;
      row.appendChild(el('td', assignment.daemon));
      row.appendChild(el('td', assignment.state === 'DELETED' ? '(was ' + assignment.node + ')' : assignment.node,
        'node'));
      var state = badge(assignment.state);
      state.className = 'state';
      row.appendChild(state);
      row.appendChild(el('td', assignment.generation, 'generation'));
      row.appendChild(el('td', time(assignment.since)));
      daemons.appendChild(row);
    });
    if (!daemons.firstChild) {
      var empty = el('td', 'No daemon assignments.');
      empty.colSpan = 5;
      daemons.appendChild(el('tr')).appendChild(empty);
    }
    var timeline = document.getElementById('timeline');
    timeline.replaceChildren();
    events.forEach(function (event) {
      var item = el('li');
      item.appendChild(el('time', event.at.toLocaleTimeString()));
      item.appendChild(document.createTextNode(event.text));
      timeline.appendChild(item);
    });
  }

  function status(text, className) {
    var node = document.getElementById('status');
    node.textContent = text;
    node.className = 'status ' + className;
  }

  function poll() {
    fetch('actuator/leadership', { headers: { Accept: 'application/json' }, cache: 'no-store' })
      .then(function (response) {
        if (!response.ok) {
          throw new Error('HTTP ' + response.status);
        }
        return response.json();
      })
      .then(function (view) {
        diff(view);
        previous = view;
        Object.keys(view.groups).forEach(function (name) {
          var group = view.groups[name];
          if (group.leader) {
            lastLeaders[name] = { leader: group.leader, term: group.term };
          }
        });
        render(view);
        status('updated ' + new Date().toLocaleTimeString(), 'ok');
      })
      .catch(function (error) {
        status('cannot reach the node: ' + error.message, 'error');
      })
      .finally(function () {
        setTimeout(poll, POLL_MILLIS);
      });
  }

  poll();
}());
