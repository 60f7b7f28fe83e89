DROP TABLE interrupts;
