-- A business's settings of ours that belong to no one resource (issue 50):
-- the country a phone number written without its country code is taken in
-- (ISO 3166-1 alpha-2; NULL: the reader's browser's), which every phone
-- input of the console uses. Operations 92 and 93 read and change it.
CREATE TABLE business_settings (
    business_id   TEXT PRIMARY KEY,
    phone_country TEXT,
    updated_at    TEXT NOT NULL
) WITHOUT ROWID;
