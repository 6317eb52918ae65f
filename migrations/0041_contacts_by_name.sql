-- Issue 50: listContacts sorts by name (`sort=name`, `-name`), A to Z in
-- either case, ties by id, resuming after the last (name, id) of a page.
-- By mobile it needs no index of its own: UNIQUE (business_id, mobile)
-- orders it, and a mobile is never tied. By creation it is the id, as ever.
CREATE INDEX contacts_business_name ON contacts (business_id, name COLLATE NOCASE, id);
