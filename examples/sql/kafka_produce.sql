-- Kafka quick start, step 1: write 200 orders as JSON into the Kafka topic
-- 'orders' on the broker started with `flinksql broker`. Four orders per
-- second of event time from 2024-01-01 00:00:00 UTC; user_id cycles 1, 2, 3
-- and amount 1.00 … 5.00, so the results of step 2 can be checked by hand.

SET 'table.local-time-zone' = 'UTC';
SET 'parallelism.default' = '1';

CREATE TABLE gen (
  order_id BIGINT
) WITH (
  'connector' = 'datagen',
  'number-of-rows' = '200',
  'fields.order_id.kind' = 'sequence',
  'fields.order_id.start' = '0',
  'fields.order_id.end' = '199'
);

CREATE TABLE orders (
  order_id   BIGINT,
  user_id    INT,
  amount     DECIMAL(10, 2),
  order_time TIMESTAMP(3)
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = '127.0.0.1:9092',
  'format' = 'json'
);

INSERT INTO orders
SELECT
  order_id,
  CAST(order_id % 3 + 1 AS INT),
  CAST(order_id % 5 + 1 AS DECIMAL(10, 2)),
  CAST(TO_TIMESTAMP_LTZ(1704067200000 + order_id * 250, 3) AS TIMESTAMP(3))
FROM gen;
