DROP TABLE memory_documents;
DROP TABLE thread_summaries;
