-- Kafka quick start, step 2: read the 'orders' topic, count and sum the
-- orders per user in 10-second tumbling event-time windows and write one JSON
-- row per window and user to the topic 'user_totals'.
--
-- 'scan.bounded.mode' = 'latest-offset' makes the job stop at the end of
-- what the topic holds when it starts (then every window is complete and is
-- emitted). Remove it to keep the job running on new orders until Ctrl-C.

SET 'table.local-time-zone' = 'UTC';
SET 'parallelism.default' = '1';

CREATE TABLE orders (
  order_id   BIGINT,
  user_id    INT,
  amount     DECIMAL(10, 2),
  order_time TIMESTAMP(3),
  WATERMARK FOR order_time AS order_time - INTERVAL '2' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = '127.0.0.1:9092',
  'properties.group.id' = 'quickstart',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json'
);

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
  'format' = 'json',
  -- as Flink: 40.00 is written 40 rather than 4E+1
  'json.encode.decimal-as-plain-number' = 'true'
);

INSERT INTO user_totals
SELECT window_start, window_end, user_id, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(order_time), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, user_id;
