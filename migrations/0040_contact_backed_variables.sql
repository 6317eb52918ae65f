-- Issue 48: every declared variable is contact-backed. A variable of the
-- built-in Contacts source is the called contact's field, and one of any
-- other structured source is the field of the contact's row of that source
-- (components/voice/src/resolve.rs), so a call to a bare number has no value
-- for either. An agent that declares any variable therefore requires a
-- contact (`contactContextRequired`: direct `toNumber` calls to it are
-- refused with 409 contact_required). Agents stored before set the flag for
-- Contacts variables only; this recomputes it from their variables.
--
-- A voice agent that declared only other sources' variables and no contact
-- categories keeps working for calls to contacts; its next update must name
-- categories, as a new agent's must. The rows of a business fenced for a
-- move (moved_businesses, migration 0037) are left alone, as their
-- triggers refuse any write of them here; an agent such a move copies to
-- its new database after that database ran this keeps its old flag until
-- its next update.
UPDATE agents
SET contact_context_required = 1
WHERE contact_context_required = 0
  AND business_id NOT IN (SELECT business_id FROM moved_businesses)
  AND EXISTS (SELECT 1 FROM agent_variables v WHERE v.business_id = agents.business_id AND v.agent_id = agents.id);
