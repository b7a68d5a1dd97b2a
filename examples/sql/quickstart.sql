-- flinksql quick start: generated orders, counted and summed per user in
-- 10-second tumbling event-time windows, printed as Flink's print connector
-- does. Bounded (200 rows), so it finishes in a moment.

SET 'table.local-time-zone' = 'UTC';
SET 'parallelism.default' = '2';

CREATE TABLE orders (
  order_id BIGINT,
  user_id  INT,
  amount   DECIMAL(10, 2),
  -- four orders per second of event time, starting at the epoch
  ts AS TO_TIMESTAMP_LTZ(order_id * 250, 3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH (
  'connector' = 'datagen',
  'number-of-rows' = '200',
  'fields.order_id.kind' = 'sequence',
  'fields.order_id.start' = '0',
  'fields.order_id.end' = '199',
  'fields.user_id.min' = '1',
  'fields.user_id.max' = '3',
  'fields.amount.min' = '1',
  'fields.amount.max' = '100'
);

CREATE TABLE user_totals (
  window_start TIMESTAMP(3),
  window_end   TIMESTAMP(3),
  user_id      INT,
  orders       BIGINT,
  total        DECIMAL(38, 2)
) WITH (
  'connector' = 'print'
);

INSERT INTO user_totals
SELECT window_start, window_end, user_id, COUNT(*), SUM(amount)
FROM TABLE(TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, user_id;
