//! What a shop's delivery says, read into the few facts AdmitOne acts on:
//! a sale (an order id, the buyer's address, and per product a
//! quantity), a refund or a chargeback of an order, or an event AdmitOne
//! does not act on. Pure: the body and the headers in, no I/O.
//!
//! Each shop's order id becomes the order's `order_ref` under the shop's
//! own `order_source` (`stripe-1a2b3c4d`), so a refund finds the order
//! its sale placed:
//! Stripe's payment intent (a Checkout Session and its Charge both name
//! it), Lemon Squeezy's order id, Gumroad's `sale_id`, and Shopify's
//! order id with the line item's (`{order}:{line item}`: one Shopify
//! order may hold several courses, and each line is its own order here).

use serde_json::Value;

use super::Provider;
use crate::refunds::RefundKind;

/// One product of a sale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sale {
    /// The order's id here (`order_ref`).
    pub order_ref: String,
    pub product_ref: String,
    pub quantity: i64,
}

/// What a delivery asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Paid: issue each mapped product's codes to the buyer.
    Paid { email: String, sales: Vec<Sale> },
    /// Refunded or charged back in full: refund these orders.
    Refunded {
        kind: RefundKind,
        order_refs: Vec<String>,
    },
    /// Nothing to do (an event type not acted on, a partial refund, an
    /// unpaid session), and why.
    Ignored(&'static str),
}

/// A delivery read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// The shop's event type.
    pub kind: Option<String>,
    /// The shop's event id, where it sends one.
    pub event_ref: Option<String>,
    pub event: Event,
}

/// Why a delivery could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub &'static str);

/// The headers a shop puts facts in (Shopify's topic and event id).
#[derive(Debug, Clone, Copy, Default)]
pub struct Headers<'a> {
    pub topic: Option<&'a str>,
    pub event_id: Option<&'a str>,
}

pub fn read(provider: Provider, headers: Headers<'_>, body: &[u8]) -> Result<Read, Unreadable> {
    match provider {
        Provider::Gumroad => gumroad(body),
        Provider::Stripe => stripe(&json(body)?),
        Provider::LemonSqueezy => lemon_squeezy(&json(body)?),
        Provider::Shopify => shopify(headers, &json(body)?),
    }
}

fn json(body: &[u8]) -> Result<Value, Unreadable> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .filter(Value::is_object)
        .ok_or(Unreadable("the body is not a JSON object"))
}

/// A string, or a number written as one (Shopify's and Lemon Squeezy's
/// ids are numbers).
fn text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn quantity(value: &Value) -> Result<i64, Unreadable> {
    match value {
        Value::Null => Ok(1),
        Value::Number(n) => n
            .as_i64()
            .ok_or(Unreadable("the quantity is not a whole number")),
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| Unreadable("the quantity is not a whole number")),
        _ => Err(Unreadable("the quantity is not a whole number")),
    }
}

fn stripe(body: &Value) -> Result<Read, Unreadable> {
    let kind = text(&body["type"]).ok_or(Unreadable("the event has no type"))?;
    let event_ref = text(&body["id"]);
    let object = &body["data"]["object"];
    let payment_intent =
        || text(&object["payment_intent"]).ok_or(Unreadable("the event names no payment intent"));
    let event = match kind.as_str() {
        "checkout.session.completed" | "checkout.session.async_payment_succeeded" => {
            if object["mode"].as_str() != Some("payment") {
                Event::Ignored(
                    "not a one-time payment (only payment-mode Checkout Sessions issue codes)",
                )
            } else if object["payment_status"].as_str() != Some("paid") {
                // An asynchronous payment: its `async_payment_succeeded`
                // event issues the codes once the money is there.
                Event::Ignored("not paid yet")
            } else {
                let email = text(&object["customer_details"]["email"])
                    .or_else(|| text(&object["customer_email"]))
                    .ok_or(Unreadable("the session names no customer email"))?;
                match text(&object["metadata"]["admitone_product"])
                    .or_else(|| text(&object["payment_link"]))
                {
                    // An account that sells other things too.
                    None => Event::Ignored(
                        "the session names no product (metadata.admitone_product, or a payment link)",
                    ),
                    Some(product_ref) => Event::Paid {
                        email,
                        sales: vec![Sale {
                            order_ref: payment_intent()?,
                            product_ref,
                            quantity: quantity(&object["metadata"]["admitone_quantity"])?,
                        }],
                    },
                }
            }
        }
        "charge.refunded" => {
            if object["refunded"].as_bool() == Some(true) {
                Event::Refunded {
                    kind: RefundKind::Refund,
                    order_refs: vec![payment_intent()?],
                }
            } else {
                Event::Ignored("a partial refund: refund the order in AdmitOne if its seats go too")
            }
        }
        "charge.dispute.created" => Event::Refunded {
            kind: RefundKind::Chargeback,
            order_refs: vec![payment_intent()?],
        },
        _ => Event::Ignored("an event type AdmitOne does not act on"),
    };
    Ok(Read {
        kind: Some(kind),
        event_ref,
        event,
    })
}

fn lemon_squeezy(body: &Value) -> Result<Read, Unreadable> {
    let kind =
        text(&body["meta"]["event_name"]).ok_or(Unreadable("the event has no meta.event_name"))?;
    let attributes = &body["data"]["attributes"];
    let order_ref = || text(&body["data"]["id"]).ok_or(Unreadable("the event names no order id"));
    let event = match kind.as_str() {
        "order_created" => {
            if attributes["status"].as_str() != Some("paid") {
                Event::Ignored("not paid")
            } else {
                let item = &attributes["first_order_item"];
                Event::Paid {
                    email: text(&attributes["user_email"])
                        .ok_or(Unreadable("the order names no user_email"))?,
                    sales: vec![Sale {
                        order_ref: order_ref()?,
                        product_ref: text(&item["product_id"])
                            .ok_or(Unreadable("the order names no product_id"))?,
                        quantity: quantity(&item["quantity"])?,
                    }],
                }
            }
        }
        "order_refunded" => {
            if attributes["status"].as_str() == Some("refunded") {
                Event::Refunded {
                    kind: RefundKind::Refund,
                    order_refs: vec![order_ref()?],
                }
            } else {
                Event::Ignored("a partial refund: refund the order in AdmitOne if its seats go too")
            }
        }
        _ => Event::Ignored("an event type AdmitOne does not act on"),
    };
    Ok(Read {
        kind: Some(kind),
        event_ref: None,
        event,
    })
}

fn shopify(headers: Headers<'_>, body: &Value) -> Result<Read, Unreadable> {
    let kind = headers
        .topic
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(Unreadable("the X-Shopify-Topic header is missing"))?
        .to_owned();
    let event = match kind.as_str() {
        "orders/paid" => {
            let order = text(&body["id"]).ok_or(Unreadable("the order has no id"))?;
            let email = text(&body["email"])
                .or_else(|| text(&body["contact_email"]))
                .ok_or(Unreadable("the order names no email"))?;
            let items = body["line_items"]
                .as_array()
                .filter(|items| !items.is_empty())
                .ok_or(Unreadable("the order has no line_items"))?;
            let sales = items
                .iter()
                // A line item with no product (a custom one) is nothing
                // a share could be.
                .filter_map(|item| {
                    let product = text(&item["product_id"])?;
                    let Some(line) = text(&item["id"]) else {
                        return Some(Err(Unreadable("a line item has no id")));
                    };
                    Some(quantity(&item["quantity"]).map(|quantity| Sale {
                        order_ref: format!("{order}:{line}"),
                        product_ref: product,
                        quantity,
                    }))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Event::Paid { email, sales }
        }
        "refunds/create" => {
            let order =
                text(&body["order_id"]).ok_or(Unreadable("the refund names no order_id"))?;
            let items = body["refund_line_items"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let mut order_refs = Vec::new();
            for item in &items {
                let line = text(&item["line_item_id"]).or_else(|| text(&item["line_item"]["id"]));
                // Both quantities said, or the refund is not known to be
                // the whole line (a missing one would read as 1).
                let (refunded, bought) = (&item["quantity"], &item["line_item"]["quantity"]);
                if refunded.is_null() || bought.is_null() {
                    continue;
                }
                if let Some(line) = line
                    && quantity(refunded)? >= quantity(bought)?
                {
                    order_refs.push(format!("{order}:{line}"));
                }
            }
            if order_refs.is_empty() {
                Event::Ignored(
                    "no line item refunded in full: refund the order in AdmitOne if its seats go too",
                )
            } else {
                Event::Refunded {
                    kind: RefundKind::Refund,
                    order_refs,
                }
            }
        }
        _ => Event::Ignored("an event type AdmitOne does not act on"),
    };
    Ok(Read {
        kind: Some(kind),
        event_ref: headers
            .event_id
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_owned),
        event,
    })
}

/// Gumroad's ping: a form (`sale_id`, `product_id`, `email`, `quantity`,
/// `refunded`, `disputed`). A refund or a dispute pings again with the
/// sale's fields and the flag set.
fn gumroad(body: &[u8]) -> Result<Read, Unreadable> {
    let fields: Vec<(String, String)> = url::form_urlencoded::parse(body).into_owned().collect();
    let field = |name: &str| {
        fields
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.trim())
            .filter(|value| !value.is_empty())
    };
    let sale = field("sale_id")
        .ok_or(Unreadable("the ping names no sale_id"))?
        .to_owned();
    let flag = |name| field(name) == Some("true");
    let (kind, event) = if flag("disputed") {
        (
            "dispute",
            Event::Refunded {
                kind: RefundKind::Chargeback,
                order_refs: vec![sale],
            },
        )
    } else if flag("refunded") {
        (
            "refund",
            Event::Refunded {
                kind: RefundKind::Refund,
                order_refs: vec![sale],
            },
        )
    } else {
        let quantity = field("quantity").map_or(Ok(1), |q| {
            q.parse()
                .map_err(|_| Unreadable("the quantity is not a whole number"))
        })?;
        (
            "sale",
            Event::Paid {
                email: field("email")
                    .ok_or(Unreadable("the ping names no email"))?
                    .to_owned(),
                sales: vec![Sale {
                    order_ref: sale,
                    product_ref: field("product_id")
                        .ok_or(Unreadable("the ping names no product_id"))?
                        .to_owned(),
                    quantity,
                }],
            },
        )
    };
    Ok(Read {
        kind: Some(kind.to_owned()),
        event_ref: None,
        event,
    })
}

#[cfg(test)]
mod tests {
    //! Bodies shaped as each shop documents them (trimmed to the fields
    //! read, plus a few that are not).

    use serde_json::json;

    use super::*;

    fn stripe_event(kind: &str, object: Value) -> Vec<u8> {
        json!({ "id": "evt_1", "object": "event", "type": kind, "data": { "object": object } })
            .to_string()
            .into_bytes()
    }

    fn read_stripe(body: &[u8]) -> Result<Read, Unreadable> {
        read(Provider::Stripe, Headers::default(), body)
    }

    fn session() -> Value {
        json!({
            "id": "cs_test_1", "object": "checkout.session", "mode": "payment",
            "payment_status": "paid", "payment_intent": "pi_1",
            "payment_link": "plink_1",
            "customer_details": { "email": "Buyer@Example.com" },
            "metadata": {}
        })
    }

    #[test]
    fn a_paid_stripe_checkout_is_a_sale_of_its_payment_intent() {
        let paid = read_stripe(&stripe_event("checkout.session.completed", session())).unwrap();
        assert_eq!(paid.kind.as_deref(), Some("checkout.session.completed"));
        assert_eq!(paid.event_ref.as_deref(), Some("evt_1"));
        assert_eq!(
            paid.event,
            Event::Paid {
                email: "Buyer@Example.com".into(),
                sales: vec![Sale {
                    order_ref: "pi_1".into(),
                    product_ref: "plink_1".into(),
                    quantity: 1
                }],
            }
        );
        // The metadata names the product and the seats, before the link.
        let mut named = session();
        named["metadata"] = json!({ "admitone_product": "course-a", "admitone_quantity": "3" });
        let paid = read_stripe(&stripe_event(
            "checkout.session.async_payment_succeeded",
            named,
        ))
        .unwrap();
        assert!(matches!(
            paid.event,
            Event::Paid { ref sales, .. } if sales[0].product_ref == "course-a" && sales[0].quantity == 3
        ));
    }

    #[test]
    fn an_unpaid_or_subscription_checkout_is_ignored_and_one_naming_no_product_is_unreadable() {
        let mut unpaid = session();
        unpaid["payment_status"] = json!("unpaid");
        assert!(matches!(
            read_stripe(&stripe_event("checkout.session.completed", unpaid))
                .unwrap()
                .event,
            Event::Ignored(_)
        ));
        let mut subscription = session();
        subscription["mode"] = json!("subscription");
        assert!(matches!(
            read_stripe(&stripe_event("checkout.session.completed", subscription))
                .unwrap()
                .event,
            Event::Ignored(_)
        ));
        // A session of something else the account sells.
        let mut nameless = session();
        nameless["payment_link"] = Value::Null;
        assert!(matches!(
            read_stripe(&stripe_event("checkout.session.completed", nameless))
                .unwrap()
                .event,
            Event::Ignored(_)
        ));
        // The customer's email where the session keeps it otherwise.
        let mut elsewhere = session();
        elsewhere["customer_details"] = json!({ "email": null });
        elsewhere["customer_email"] = json!("other@example.com");
        assert!(matches!(
            read_stripe(&stripe_event("checkout.session.completed", elsewhere)).unwrap().event,
            Event::Paid { ref email, .. } if email == "other@example.com"
        ));
        let mut no_email = session();
        no_email["customer_details"] = json!({});
        assert!(read_stripe(&stripe_event("checkout.session.completed", no_email)).is_err());
        let mut fractional = session();
        fractional["metadata"] = json!({ "admitone_quantity": "1.5" });
        assert!(read_stripe(&stripe_event("checkout.session.completed", fractional)).is_err());
    }

    #[test]
    fn a_full_stripe_refund_or_a_dispute_refunds_the_payment_intent_and_a_partial_one_does_not() {
        let charge =
            |refunded| json!({ "id": "ch_1", "payment_intent": "pi_1", "refunded": refunded });
        assert_eq!(
            read_stripe(&stripe_event("charge.refunded", charge(true)))
                .unwrap()
                .event,
            Event::Refunded {
                kind: RefundKind::Refund,
                order_refs: vec!["pi_1".into()]
            }
        );
        assert!(matches!(
            read_stripe(&stripe_event("charge.refunded", charge(false)))
                .unwrap()
                .event,
            Event::Ignored(_)
        ));
        assert_eq!(
            read_stripe(&stripe_event(
                "charge.dispute.created",
                json!({ "id": "dp_1", "payment_intent": "pi_1" })
            ))
            .unwrap()
            .event,
            Event::Refunded {
                kind: RefundKind::Chargeback,
                order_refs: vec!["pi_1".into()]
            }
        );
        assert!(matches!(
            read_stripe(&stripe_event("customer.created", json!({})))
                .unwrap()
                .event,
            Event::Ignored(_)
        ));
        for body in [&b"[]"[..], b"not json", b"{}"] {
            assert!(read_stripe(body).is_err(), "{body:?}");
        }
    }

    fn lemon(event: &str, status: &str) -> Vec<u8> {
        json!({
            "meta": { "event_name": event },
            "data": { "type": "orders", "id": "1001", "attributes": {
                "status": status, "user_email": "buyer@example.com",
                "first_order_item": { "product_id": 42, "variant_id": 7, "quantity": 2 }
            }}
        })
        .to_string()
        .into_bytes()
    }

    #[test]
    fn lemon_squeezy_orders_and_refunds() {
        let paid = read(
            Provider::LemonSqueezy,
            Headers::default(),
            &lemon("order_created", "paid"),
        )
        .unwrap();
        assert_eq!(
            paid.event,
            Event::Paid {
                email: "buyer@example.com".into(),
                sales: vec![Sale {
                    order_ref: "1001".into(),
                    product_ref: "42".into(),
                    quantity: 2
                }],
            }
        );
        let pending = read(
            Provider::LemonSqueezy,
            Headers::default(),
            &lemon("order_created", "pending"),
        )
        .unwrap();
        assert!(matches!(pending.event, Event::Ignored(_)));
        let refunded = read(
            Provider::LemonSqueezy,
            Headers::default(),
            &lemon("order_refunded", "refunded"),
        )
        .unwrap();
        assert_eq!(
            refunded.event,
            Event::Refunded {
                kind: RefundKind::Refund,
                order_refs: vec!["1001".into()]
            }
        );
        let partial = read(
            Provider::LemonSqueezy,
            Headers::default(),
            &lemon("order_refunded", "partial_refund"),
        )
        .unwrap();
        assert!(matches!(partial.event, Event::Ignored(_)));
    }

    #[test]
    fn shopify_orders_become_one_order_per_product_and_full_line_refunds_refund_them() {
        let topic = |topic| Headers {
            topic: Some(topic),
            event_id: Some("ev-1"),
        };
        let order = json!({
            "id": 820982911946154508_u64, "email": "buyer@example.com",
            "line_items": [
                { "id": 466157049, "product_id": 632910392, "quantity": 1 },
                { "id": 518995019, "product_id": null, "quantity": 1 },
                { "id": 703073504, "product_id": 632910392, "quantity": 5 }
            ]
        });
        let paid = read(
            Provider::Shopify,
            topic("orders/paid"),
            order.to_string().as_bytes(),
        )
        .unwrap();
        assert_eq!(paid.event_ref.as_deref(), Some("ev-1"));
        assert_eq!(
            paid.event,
            Event::Paid {
                email: "buyer@example.com".into(),
                sales: vec![
                    // Two lines of one product (two variants): two orders.
                    Sale {
                        order_ref: "820982911946154508:466157049".into(),
                        product_ref: "632910392".into(),
                        quantity: 1
                    },
                    Sale {
                        order_ref: "820982911946154508:703073504".into(),
                        product_ref: "632910392".into(),
                        quantity: 5
                    },
                ],
            }
        );
        let refund = json!({
            "order_id": 820982911946154508_u64,
            "refund_line_items": [
                { "line_item_id": 466157049, "quantity": 1,
                  "line_item": { "id": 466157049, "product_id": 632910392, "quantity": 1 } },
                { "line_item_id": 703073504, "quantity": 2,
                  "line_item": { "id": 703073504, "product_id": 632910392, "quantity": 5 } }
            ]
        });
        assert_eq!(
            super::read(
                Provider::Shopify,
                topic("refunds/create"),
                refund.to_string().as_bytes()
            )
            .unwrap()
            .event,
            Event::Refunded {
                kind: RefundKind::Refund,
                order_refs: vec!["820982911946154508:466157049".into()]
            }
        );
        // A refund line that does not say how many the line held is not
        // known to be whole.
        let vague = json!({ "order_id": 1, "refund_line_items": [
            { "line_item_id": 466157049, "quantity": 1 } ] });
        assert!(matches!(
            super::read(
                Provider::Shopify,
                topic("refunds/create"),
                vague.to_string().as_bytes()
            )
            .unwrap()
            .event,
            Event::Ignored(_)
        ));
        let missing_topic = super::read(
            Provider::Shopify,
            Headers::default(),
            order.to_string().as_bytes(),
        );
        assert!(missing_topic.is_err());
    }

    #[test]
    fn gumroad_pings_are_sales_refunds_and_disputes() {
        let sale = b"sale_id=S1&product_id=P1&email=buyer%40example.com&quantity=2&refunded=false";
        assert_eq!(
            read(Provider::Gumroad, Headers::default(), sale)
                .unwrap()
                .event,
            Event::Paid {
                email: "buyer@example.com".into(),
                sales: vec![Sale {
                    order_ref: "S1".into(),
                    product_ref: "P1".into(),
                    quantity: 2
                }],
            }
        );
        let refund = b"sale_id=S1&product_id=P1&email=buyer%40example.com&refunded=true";
        assert_eq!(
            read(Provider::Gumroad, Headers::default(), refund)
                .unwrap()
                .event,
            Event::Refunded {
                kind: RefundKind::Refund,
                order_refs: vec!["S1".into()]
            }
        );
        let dispute = b"sale_id=S1&product_id=P1&disputed=true&refunded=true";
        assert!(matches!(
            read(Provider::Gumroad, Headers::default(), dispute)
                .unwrap()
                .event,
            Event::Refunded {
                kind: RefundKind::Chargeback,
                ..
            }
        ));
        assert!(read(Provider::Gumroad, Headers::default(), b"product_id=P1").is_err());
        assert!(
            read(
                Provider::Gumroad,
                Headers::default(),
                b"sale_id=S1&product_id=P1"
            )
            .is_err()
        );
    }
}
