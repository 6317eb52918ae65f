// The console's routes: loaded last, once every page function is defined
// (the scripts are classic and deferred, so they run in document order and
// share one global scope; DOMContentLoaded in session.js starts the router).
"use strict";

const routes = [
  [/^#?\/?$/, overviewPage],
  [/^#\/keys$/, keysPage],
  [/^#\/contacts$/, contactsPage],
  [/^#\/contacts\/([0-9a-f-]{36})$/, contactPage],
  [/^#\/agents$/, agentsPage],
  [/^#\/agents\/([0-9a-f-]{36})\/test$/, agentTestPage],
  // A page of changes names the scope they take: without it, the page is
  // shown read-only (session.js lockForms), never as a form that would fail.
  [/^#\/agents\/new$/, () => agentForm(null), "agents:write", "Creating an agent takes an owner."],
  [/^#\/agents\/([0-9a-f-]{36})$/, (id) => agentForm(id), "agents:write", "You can read this agent's settings; changing them takes an owner."],
  [/^#\/data-sources$/, dataSourcesPage],
  [/^#\/data-sources\/([0-9a-f-]{36})$/, (id) => dataSourcePage(id, null)],
  [/^#\/data-sources\/([0-9a-f-]{36})\/ingestions\/([0-9a-f-]{36})$/, dataSourcePage],
  [/^#\/messages$/, messagesPage],
  [/^#\/inbox$/, () => inboxPage(null)],
  [/^#\/inbox\/saved-replies$/, savedRepliesPage],
  [/^#\/inbox\/([0-9a-f-]{36})$/, inboxPage],
  [/^#\/channels$/, channelsPage],
  [/^#\/webhooks$/, webhooksPage],
  [/^#\/webhooks\/([0-9a-f-]{36})$/, deliveriesPage],
  [/^#\/credits$/, creditsPage],
  [/^#\/calls$/, callsPage],
  [/^#\/calls\/([0-9a-f-]{36})$/, callPage],
  [/^#\/campaigns$/, campaignsPage],
  [/^#\/campaigns\/([0-9a-f-]{36})$/, campaignPage],
];
