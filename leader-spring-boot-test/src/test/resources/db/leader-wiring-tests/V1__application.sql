CREATE TABLE application_table (id int PRIMARY KEY);
