-- Secret plugin settings at rest (issue 40): the values a plugin's manifest
-- marks `secret` are kept here, each sealed with ChaCha20-Poly1305 under the
-- server's SWITCHBOARD_SETTINGS_KEY (plugins/sealed.rs), as a JSON object of
-- setting name to sealed value; `settings_json` keeps the other settings.
-- A row written before this migration keeps its secrets in `settings_json`
-- until it is chosen again or resealed (`admin provider reseal --plugin-dir`).
ALTER TABLE provider_choices ADD COLUMN secret_settings_json TEXT NOT NULL DEFAULT '{}';

-- Embeddings from AI plugins (issue 40): an `ai` plugin whose manifest
-- declares `[embeddings]` makes the vectors of its business's passages; the
-- model they are stored under (`plugin:<name>/<model>`, compared with
-- data_sources.embedded_model). NULL: the server's embeddings model.
ALTER TABLE provider_choices ADD COLUMN embeddings_model TEXT;
