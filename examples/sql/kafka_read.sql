-- Kafka quick start, step 3: read the windowed results back from the topic
-- 'user_totals' and print them as a table (bounded: stops at the end of the
-- topic).

SET 'table.local-time-zone' = 'UTC';
-- Every row with its op column, as it arrives (the default, 'table', prints
-- the final table when the query ends).
SET 'sql-client.execution.result-mode' = 'tableau';

CREATE TABLE user_totals (
  window_start TIMESTAMP(3),
  window_end   TIMESTAMP(3),
  user_id      INT,
  orders       BIGINT,
  total        DECIMAL(38, 2)
) WITH (
  'connector' = 'kafka',
  'topic' = 'user_totals',
  'properties.bootstrap.servers' = '127.0.0.1:9092',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json'
);

SELECT * FROM user_totals ORDER BY window_start, user_id;
