-- One pgbench transaction of the demo's application: a new order with its
-- lines, a payment, a shipment, sometimes a cancellation.
\set customer random(1, 2000)
\set sku1 random(1, 500)
\set sku2 random(1, 500)
\set some_order random(1, 30000)
BEGIN;
INSERT INTO shop.orders (customer_id, status) VALUES (:customer, 'new') RETURNING id AS new_order \gset
INSERT INTO shop."Line Items" VALUES (:new_order, 1, 'SKU-' || :sku1, 2), (:new_order, 2, 'SKU-' || :sku2, 1);
UPDATE shop.orders SET total = (SELECT sum(li.quantity * p.price) FROM shop."Line Items" li
    JOIN shop.products p USING (sku) WHERE li."Order Id" = :new_order) WHERE id = :new_order;
COMMIT;
UPDATE shop.orders SET status = 'shipped' WHERE id = :some_order AND status = 'paid';
BEGIN;
DELETE FROM shop."Line Items" WHERE "Order Id" = :some_order + 1 AND (:some_order % 7) = 0;
DELETE FROM shop.orders WHERE id = :some_order + 1 AND (:some_order % 7) = 0;
COMMIT;
