// Renders a view of the cluster, refreshed every second. Served by a node, it polls that node's leadership endpoint.
// Served by the demo's launcher, it polls the launcher's /demo/cluster, which carries every node's process state and
// leadership endpoint, merges the nodes' views, and offers buttons that inject faults into the nodes. Transitions are
// found by comparing each answer with the previous one, so the timeline starts when the page is opened.
(function () {
  'use strict';

  var POLL_MILLIS = 1000;
  var MAX_EVENTS = 80;
  // null until the first answer tells whether a demo launcher serves the page.
  var demo = null;
  var previous = null;
  // The last leader seen per group: a hand-over often shows a poll with no leader in between, and the new leader's
  // line should still say whom it replaced.
  var lastLeaders = {};
  var events = [];
  // Demo only: node names by member id, the processes of the previous answer, and the rejected writes already shown.
  var names = {};
  var processes = {};
  var seenRejections = {};
  // Demo only: when this page sent each node its last kill -9, by node name (the browser's clock).
  var killedAt = {};

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

  function label(id) {
    return names[id] || id;
  }

  function record(text, className, at) {
    events.unshift({ at: at || new Date(), text: text, className: className });
    events.length = Math.min(events.length, MAX_EVENTS);
  }

  function placement(assignment) {
    return assignment.daemon + ': ' + assignment.state + ' on ' + label(assignment.node)
      + ' (generation ' + assignment.generation + ')';
  }

  // How the previous leader of a group lost it, as far as the demo's launcher knows: after a fault it was a takeover,
  // after SIGTERM a hand-over. After a kill -9 from this page, also how soon the new leader showed, and whether it
  // took over before the dead leader's lease would have run out (crash takeover, leader.lease.crash-takeover-groups)
  // or after.
  function howLost(was) {
    var process = processes[label(was.leader)];
    if (!demo || !process) {
      return '';
    }
    if (process.state === 'PAUSED' || process.state === 'KILLED' || process.state === 'EXITED') {
      return ' \u2014 takeover, ' + process.name + ' is ' + process.state + afterKill(process.name, was);
    }
    if (process.state === 'STOPPING' || process.state === 'STOPPED') {
      return ' \u2014 hand-over, ' + process.name + ' stopped gracefully';
    }
    return '';
  }

  function afterKill(name, was) {
    var killed = killedAt[name];
    if (killed === undefined || was.remainingMillis === null || was.remainingMillis === undefined) {
      return '';
    }
    var now = Date.now();
    // The lease as last seen before the kill, counted down on this page's clock.
    var leftMillis = was.remainingMillis - (now - was.seenAt);
    return '; seen ' + ((now - killed) / 1000).toFixed(1) + ' s after the kill (polled every '
      + POLL_MILLIS / 1000 + ' s), ' + (leftMillis > 0 ? (leftMillis / 1000).toFixed(1)
      + ' s before the dead leader\'s lease would have run out: crash takeover' : 'once its lease ran out');
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
        record(now.daemon + ': ' + label(before.node) + ' \u2192 ' + label(now.node)
          + ' (generation ' + now.generation + ')');
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
        record(name + ': ' + (group.leader ? 'led by ' + label(group.leader) + ' (term ' + group.term + ')'
          : 'no leader'));
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
        var replaced = was && !same;
        record(name + ': ' + (now.leader ? 'leader ' + label(now.leader) + ' (term ' + now.term + ')' : 'no leader')
          + (replaced ? ', was ' + label(was.leader) + ' (term ' + was.term + ')' : '')
          + (replaced && now.leader ? howLost(was) : ''), replaced && now.leader ? 'fault' : undefined);
      }
    });
    var known = {};
    previous.members.forEach(function (member) { known[member.id] = member; });
    view.members.forEach(function (member) {
      var before = known[member.id];
      if (!before) {
        record('node ' + label(member.id) + ' joined');
      }
      else if (before.state !== member.state) {
        record('node ' + label(member.id) + ' is ' + member.state);
      }
      delete known[member.id];
    });
    Object.keys(known).forEach(function (id) { record('node ' + label(id) + ' left'); });
    diffAssignments(view);
  }

  // Demo: one view of the cluster from the nodes that answered. Each group's lease as the node that saw the highest
  // term reports it; the members and assignments as the leader of the daemons' group sees them, else any node.
  function merge(cluster) {
    var view = { node: null, groups: {}, members: [], assignments: [] };
    var chosen = null;
    cluster.nodes.forEach(function (node) {
      var seen = node.leadership;
      if (!seen) {
        return;
      }
      seen.members.forEach(function (member) { names[member.id] = member.name; });
      Object.keys(seen.groups).forEach(function (name) {
        var group = seen.groups[name];
        var known = view.groups[name];
        if (!known || group.term > known.term || (group.term === known.term && group.leader && !known.leader)) {
          view.groups[name] = group;
        }
      });
      var leadsDefault = seen.groups['default'] && seen.groups['default'].role === 'LEADER';
      if (chosen === null || leadsDefault) {
        chosen = seen;
      }
    });
    if (chosen !== null) {
      view.members = chosen.members;
      view.assignments = chosen.assignments;
    }
    return view;
  }

  var PROCESS_CHANGES = {
    RUNNING: 'running', PAUSED: 'paused (SIGSTOP)', STOPPING: 'stopping (SIGTERM)', STOPPED: 'stopped',
    KILLED: 'killed (SIGKILL)', EXITED: 'exited'
  };

  function diffProcesses(cluster) {
    var now = {};
    cluster.nodes.forEach(function (node) {
      now[node.name] = node;
      var before = processes[node.name];
      if (!before || before.pid !== node.pid) {
        record(node.name + ' ' + (before ? 'restarted' : PROCESS_CHANGES[node.state]) + ' (pid ' + node.pid
          + ', port ' + node.port + ')', 'fault');
      }
      else if (before.state !== node.state) {
        var text = (before.state === 'PAUSED' && node.state === 'RUNNING') ? 'resumed (SIGCONT)'
          : PROCESS_CHANGES[node.state];
        record(node.name + ' ' + text + ' (pid ' + node.pid + ')', 'fault');
      }
    });
    return now;
  }

  function diffRejections(cluster) {
    cluster.nodes.forEach(function (node) {
      (node.rejectedWrites || []).slice().reverse().forEach(function (write) {
        var key = node.name + '/' + node.pid + '/' + write.seq;
        if (seenRejections[key]) {
          return;
        }
        seenRejections[key] = true;
        var daemon = write.group === write.writer;
        var unit = daemon ? 'generation' : 'term';
        record(node.name + ': rejected write of ' + write.writer + ' under ' + write.group + ' ' + unit + ' '
          + write.heldTerm + '; the database has ' + unit + ' ' + write.currentTerm
          + (write.currentHolder ? ', held by ' + label(write.currentHolder) : ''), 'rejected', new Date(write.at));
      });
    });
  }

  function act(node, action) {
    if (action === 'kill') {
      killedAt[node.name] = Date.now();
    }
    fetch('demo/nodes/' + node.number + '/' + action, { method: 'POST', headers: { Accept: 'application/json' } })
      .then(function (response) {
        if (!response.ok) {
          return response.json().then(function (problem) {
            status(node.name + ' ' + action + ': ' + (problem.detail || 'HTTP ' + response.status), 'error');
          });
        }
        return null;
      })
      .catch(function (error) { status(node.name + ' ' + action + ': ' + error.message, 'error'); });
  }

  var ACTIONS = [
    { action: 'kill', text: 'kill -9', when: ['RUNNING', 'PAUSED', 'STOPPING'] },
    { action: 'pause', text: 'pause', when: ['RUNNING'] },
    { action: 'resume', text: 'resume', when: ['PAUSED'] },
    { action: 'stop', text: 'stop', when: ['RUNNING', 'PAUSED'] },
    { action: 'restart', text: 'restart', when: ['RUNNING', 'PAUSED', 'STOPPED', 'KILLED', 'EXITED'] }
  ];

  function controls(node) {
    var cell = el('td', null, 'controls');
    ACTIONS.forEach(function (control) {
      var button = el('button', control.text);
      button.type = 'button';
      button.dataset.action = control.action;
      button.disabled = control.when.indexOf(node.state) < 0;
      button.addEventListener('click', function () { act(node, control.action); });
      cell.appendChild(button);
    });
    return cell;
  }

  // This node's state of each decision log it applies: "<group> <applied index> (lag <entries>, ≤ <staleness>)".
  function logState(leadership) {
    if (!leadership || !leadership.groups) {
      return '–';
    }
    var states = Object.keys(leadership.groups).sort().filter(function (name) {
      return leadership.groups[name].log;
    }).map(function (name) {
      var log = leadership.groups[name].log;
      return name + ' ' + log.appliedIndex + ' (lag ' + log.lagEntries + ', '
          + (log.stalenessMillis === null ? '?' : '≤ ' + log.stalenessMillis + ' ms')
          + (log.halted ? ', halted' : '') + ')';
    });
    return states.length ? states.join(', ') : '–';
  }

  function renderDemoNodes(view, cluster, leads, assigned) {
    var nodes = document.querySelector('#nodes tbody');
    nodes.replaceChildren();
    cluster.nodes.forEach(function (node) {
      var member = view.members.filter(function (candidate) {
        return candidate.name === node.name && candidate.pid === node.pid;
      })[0];
      var row = el('tr');
      row.dataset.name = node.name;
      if (member) {
        row.dataset.node = member.id;
      }
      row.appendChild(el('td', node.name));
      row.appendChild(el('td', node.port + ' / ' + (node.pid === null ? '–' : node.pid)));
      var state = badge(node.state);
      state.className = 'process';
      row.appendChild(state);
      row.appendChild(member ? badge(member.state) : el('td', '–'));
      row.appendChild(el('td', member ? time(member.lastHeartbeat) : '–'));
      row.appendChild(el('td', member ? (leads[member.id] || []).sort().join(', ') : '', 'leads'));
      row.appendChild(el('td', member ? (assigned[member.id] || []).sort().join(', ') : ''));
      row.appendChild(el('td', logState(node.leadership), 'log'));
      row.appendChild(controls(node));
      nodes.appendChild(row);
    });
  }

  function renderNodes(view, leads, assigned) {
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
  }

  function render(view, cluster) {
    if (!demo) {
      document.getElementById('node').textContent = view.node;
    }
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
      if (group.leader) {
        var leader = el('td', label(group.leader), 'leader');
        leader.title = group.leader;
        row.appendChild(leader);
      }
      else {
        row.appendChild(badge('none'));
      }
      row.appendChild(el('td', group.term, 'term'));
      var role = badge(group.role);
      role.classList.add('role');
      row.appendChild(role);
      row.appendChild(el('td', group.remainingMillis === null ? '–' : (group.remainingMillis / 1000).toFixed(1) + ' s'));
      var log = group.log;
      row.appendChild(el('td', log ? log.appliedIndex + ' (lag ' + log.lagEntries + ', '
          + (log.stalenessMillis === null ? '?' : '≤ ' + log.stalenessMillis + ' ms') + ')' : '–', 'log'));
      groups.appendChild(row);
    });
    var assigned = {};
    view.assignments.forEach(function (assignment) {
      if (assignment.state !== 'DELETED') {
        (assigned[assignment.node] = assigned[assignment.node] || []).push(assignment.daemon);
      }
    });
    if (demo) {
      renderDemoNodes(view, cluster, leads, assigned);
    }
    else {
      renderNodes(view, leads, assigned);
    }
    var daemons = document.querySelector('#daemons tbody');
    daemons.replaceChildren();
    view.assignments.forEach(function (assignment) {
      var row = el('tr', null, assignment.state === 'ACTIVE' ? '' : 'unsettled');
      row.dataset.daemon = assignment.daemon;
      row.appendChild(el('td', assignment.daemon));
      row.appendChild(el('td', assignment.state === 'DELETED' ? '(was ' + label(assignment.node) + ')'
        : label(assignment.node), 'node'));
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
      var item = el('li', null, event.className);
      item.appendChild(el('time', event.at.toLocaleTimeString()));
      item.appendChild(document.createTextNode(event.text));
      timeline.appendChild(item);
    });
  }

  // What the nodes coordinate through, from the launcher's answer or the node's /coordinator, and what a term is there.
  function showCoordinator(answer) {
    var line = document.getElementById('coordinator');
    var text;
    if (answer.coordinator === 'etcd') {
      text = 'Coordinated through etcd (' + answer.endpoints.join(', ') + '): the leases, members, daemon assignments '
        + 'and decision log live there. A term is the etcd revision that last wrote the group\'s lease key, so terms '
        + 'rise by more than one; fenced writes use the database\'s fences table.';
    }
    else {
      text = 'Coordinated through the database (' + answer.coordinator + '): the leases are rows of it, and a '
        + 'group\'s term rises with each grant of its lease.';
    }
    if (line.textContent !== text) {
      line.textContent = text;
      line.hidden = false;
    }
  }

  function status(text, className) {
    var node = document.getElementById('status');
    node.textContent = text;
    node.className = 'status ' + className;
  }

  function show(answer) {
    var view = answer;
    var cluster = null;
    if (demo) {
      cluster = answer;
      view = merge(cluster);
      // Before the leases are compared, so that a change of leader is put down to the fault that caused it even when
      // it follows in the same second, as a hand-over does.
      processes = diffProcesses(cluster);
    }
    diff(view);
    if (demo) {
      diffRejections(cluster);
    }
    previous = view;
    Object.keys(view.groups).forEach(function (name) {
      var group = view.groups[name];
      if (group.leader) {
        lastLeaders[name] = {
          leader: group.leader, term: group.term, remainingMillis: group.remainingMillis, seenAt: Date.now()
        };
      }
    });
    render(view, cluster);
  }

  function startDemo() {
    demo = true;
    document.body.classList.add('demo');
    document.title = 'Cluster view: the demo';
    document.getElementById('source').hidden = true;
    document.getElementById('demo-source').hidden = false;
  }

  function poll() {
    var source = demo === false ? 'actuator/leadership' : 'demo/cluster';
    fetch(source, { headers: { Accept: 'application/json' }, cache: 'no-store' })
      .then(function (response) {
        if (demo === null && response.status === 404) {
          // Served by a node: no launcher API, so the node's own view.
          demo = false;
          fetch('coordinator', { headers: { Accept: 'application/json' } })
            .then(function (answer) { return answer.ok ? answer.json() : null; })
            .then(function (answer) {
              if (answer) {
                showCoordinator(answer);
              }
            })
            .catch(function () { /* the line stays hidden */ });
          return null;
        }
        if (!response.ok) {
          throw new Error('HTTP ' + response.status);
        }
        return response.json();
      })
      .then(function (answer) {
        if (answer === null) {
          return;
        }
        if (demo === null) {
          startDemo();
        }
        if (demo) {
          showCoordinator(answer);
        }
        show(answer);
        status('updated ' + new Date().toLocaleTimeString(), 'ok');
      })
      .catch(function (error) {
        status('cannot reach the ' + (demo ? 'launcher' : 'node') + ': ' + error.message, 'error');
      })
      .finally(function () {
        setTimeout(poll, demo === false && previous === null ? 0 : POLL_MILLIS);
      });
  }

  poll();
}());
