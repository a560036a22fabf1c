//! A server-rendered SVG bar chart of daily bindings and accesses: a
//! picture that needs no JavaScript and no charting library, with the same
//! figures in a table for screen readers.

use crate::i18n::Msg;
use leptos::prelude::*;

use crate::{
    console::dashboard::DayView,
    i18n::{lang, t},
};

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 36.0;
const BOTTOM: f64 = 28.0;
const TOP: f64 = 12.0;

#[component]
pub fn ActivityChart(days: Vec<DayView>) -> impl IntoView {
    let max = days
        .iter()
        .map(|d| d.accesses.max(d.bindings))
        .max()
        .unwrap_or(0)
        .max(1);
    // A round top for the axis: 1, 2, 5, 10, 20, 50, …
    let mut top = 1i64;
    while top < max {
        top = match top.to_string().chars().next() {
            Some('1') => top * 2,
            Some('2') => top / 2 * 5,
            _ => top * 2,
        };
    }
    let plot_h = HEIGHT - BOTTOM - TOP;
    let slot = (WIDTH - LEFT) / days.len().max(1) as f64;
    let bar = (slot / 2.0 - 3.0).max(2.0);
    let y = move |v: i64| TOP + plot_h - plot_h * v as f64 / top as f64;
    let bars = days
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let x = LEFT + slot * i as f64 + 2.0;
            let (ya, yb) = (y(d.accesses), y(d.bindings));
            let base = TOP + plot_h;
            view! {
                <g>
                    <rect class="bar-accesses" x=format!("{x:.1}") y=format!("{ya:.1}") width=format!("{bar:.1}") height=format!("{:.1}", base - ya)>
                        <title>{lang().format(Msg::Accesses, &[("accesses", &d.accesses), ("label", &d.label)])}</title>
                    </rect>
                    <rect class="bar-bindings" x=format!("{:.1}", x + bar + 1.0) y=format!("{yb:.1}") width=format!("{bar:.1}") height=format!("{:.1}", base - yb)>
                        <title>{lang().format(Msg::Bindings, &[("bindings", &d.bindings), ("label", &d.label)])}</title>
                    </rect>
                    {(i % 2 == 0).then(|| view! {
                        <text class="axis-label" x=format!("{:.1}", x + bar) y=format!("{:.1}", HEIGHT - 8.0) text-anchor="middle">{d.label.clone()}</text>
                    })}
                </g>
            }
        })
        .collect_view();
    let rows = days
        .iter()
        .map(|d| view! { <tr><td>{d.label.clone()}</td><td>{d.bindings}</td><td>{d.accesses}</td></tr> })
        .collect_view();
    view! {
        <figure class="chart card">
            <figcaption>
                {t(Msg::Last14Days)}
                <span class="legend accesses">{t(Msg::Accesses2)}</span>{t(Msg::And)}
                <span class="legend bindings">{t(Msg::NewBindings)}</span>
            </figcaption>
            <svg viewBox=format!("0 0 {WIDTH} {HEIGHT}") role="img" aria-label=t(Msg::AccessesAndNewBindingsPerDay) class="activity-chart">
                <line class="axis" x1=LEFT y1=TOP + plot_h x2=WIDTH y2=TOP + plot_h/>
                <text class="axis-label" x=LEFT - 6.0 y=TOP + 4.0 text-anchor="end">{top}</text>
                <text class="axis-label" x=LEFT - 6.0 y=TOP + plot_h text-anchor="end">"0"</text>
                {bars}
            </svg>
            <table class="visually-hidden">
                <caption>{t(Msg::ActivityPerDay)}</caption>
                <thead><tr><th>{t(Msg::Day)}</th><th>{t(Msg::NewBindings2)}</th><th>{t(Msg::Accesses3)}</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
        </figure>
    }
}
