// A learner whose account was registered before registration started
// from the address, and never proved it (such accounts remain): the code
// they enter waits, opening the course asks them to verify (with "send
// again"), the mail's link confirms, and the same code then binds.
import { expect, test } from "@playwright/test";
import { linkIn, mailsFor, openHydrated, register, uniqueEmail, waitForMail } from "./fixtures";
import { adminApi, createCourse, enterCode, shareState, snapshot, sql } from "./course";

test("an unverified learner verifies from the mail and keeps the pending code", async ({ page }, testInfo) => {
  const course = await createCourse(await adminApi());
  await openHydrated(page, `/s/${course.slug}`);
  await page.getByRole("main").getByRole("link", { name: "Create account" }).click();
  const email = uniqueEmail("unverified");
  await register(page, email, "Not Yet Verified");
  await expect(page).toHaveURL(new RegExp(`/s/${course.slug}$`));
  // What an account registered under the old rules looks like.
  sql(`UPDATE accounts SET email_verified_at = NULL WHERE email = '${email}'`);
  await openHydrated(page, `/s/${course.slug}`);

  await enterCode(page, course.codes[0]);
  await expect(shareState(page)).toHaveAttribute("data-state", "pending");
  await expect(page.locator(".verify-first")).toContainText(`We sent a link to ${email}`);
  await snapshot(page, testInfo, "share-pending-verify-first");

  // Opening refuses to bind, and offers the link again.
  await page.getByRole("link", { name: "Lesson 1: Ownership" }).click();
  await expect(page.locator(".refused")).toHaveAttribute("data-reason", "email_not_verified");
  await page.locator("body[data-hydrated]").waitFor();
  await page.getByRole("button", { name: "Send the verification link again" }).click();
  await expect(page.getByRole("status").filter({ hasText: `We sent a new link to ${email}` })).toBeVisible();
  await expect
    .poll(async () => (await mailsFor(email)).filter((m) => m.subject === "Confirm your email address").length)
    .toBe(1);
  expect(sql(`SELECT count(*) FROM auth_codes WHERE share_id = '${course.id}' AND bound_principal IS NOT NULL`)).toBe("0");

  // The link: one click confirms; back to the course, the code binds.
  const mail = await waitForMail(email, "Confirm your email address");
  await page.goto(linkIn(mail, "/verify-email"));
  await page.getByRole("button", { name: "Confirm my address" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Your email address is verified" })).toBeVisible();
  await openHydrated(page, `/s/${course.slug}`);
  await expect(shareState(page)).toHaveAttribute("data-state", "pending");
  await page.getByRole("link", { name: "Lesson 1: Ownership" }).click();
  await expect(page.locator(".flash.success")).toContainText("now bound to this account");
  expect(sql(`SELECT count(*) FROM auth_codes WHERE share_id = '${course.id}' AND bound_principal IS NOT NULL`)).toBe("1");
  // The receipt arrives.
  await waitForMail(email, `You now hold ${course.title}`);
});
