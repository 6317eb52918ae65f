-- Photoapp private replies (issue 40): the business may answer a public
-- comment once, privately (a direct message to the commenter), within 7
-- days of the comment.
-- When the comment was written, as the provider dates it (else when it
-- arrived): the private reply's window starts here.
ALTER TABLE photoapp_comments ADD COLUMN commented_at TEXT;
-- Our id of the comment's one private reply (a message of the commenter's
-- conversation); NULL until it is sent.
ALTER TABLE photoapp_comments ADD COLUMN private_reply_message_id TEXT;
-- The provider's id of the comment an outbound photoapp message answers
-- privately: the provider addresses the commenter by the comment.
ALTER TABLE messages ADD COLUMN reply_to_comment TEXT;
