// The console's routes: loaded last, once every page function is defined
// (the scripts are classic and deferred, so they run in document order and
// share one global scope; DOMContentLoaded in core.js starts the router).
"use strict";

const routes = [
  [/^#?\/?$/, overviewPage],
  [/^#\/keys$/, keysPage],
  [/^#\/contacts$/, contactsPage],
  [/^#\/contacts\/([0-9a-f-]{36})$/, contactPage],
  [/^#\/agents$/, agentsPage],
  [/^#\/agents\/([0-9a-f-]{36})\/test$/, agentTestPage],
  [/^#\/agents\/new$/, () => agentForm(null)],
  [/^#\/agents\/([0-9a-f-]{36})$/, (id) => agentForm(id)],
  [/^#\/data-sources$/, dataSourcesPage],
  [/^#\/data-sources\/([0-9a-f-]{36})$/, (id) => dataSourcePage(id, null)],
  [/^#\/data-sources\/([0-9a-f-]{36})\/ingestions\/([0-9a-f-]{36})$/, dataSourcePage],
  [/^#\/messages$/, messagesPage],
  [/^#\/inbox$/, () => inboxPage(null)],
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
