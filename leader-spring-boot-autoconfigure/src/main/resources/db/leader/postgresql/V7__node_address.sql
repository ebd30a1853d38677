-- Node addresses. ${prefix} is the validated leader.jdbc.table-prefix.

-- base_url: where other nodes reach the node's web application (leader.node.base-url, or derived from the local port
-- once the web server has started), so that a follower can forward a read or a write to the group's leader.
-- zone: the zone or region the node runs in (leader.node.zone). Both are NULL when the node advertises none.
ALTER TABLE ${prefix}nodes ADD COLUMN base_url VARCHAR(500), ADD COLUMN zone VARCHAR(64);
