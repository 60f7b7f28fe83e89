DROP TABLE message_drafts;
DROP TABLE messages;
DROP TABLE threads;
