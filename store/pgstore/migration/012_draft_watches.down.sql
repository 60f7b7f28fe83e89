DROP TABLE draft_watches;
